"""Cores as users name them, and one table of facts per core: the tables agree.

``thresholds_by_core.CORES`` (facts per core),
``thresholds_by_core.CORE_ALIASES`` (what users type),
``pmu.cpu`` (what detection names), ``pmu.arm_data`` (Arm's event lists),
``metrics.TOPDOWN_MODELS`` (level-1 slot formulas), the ``--cpu`` help and the table in
docs/diagnosis.md ("Naming a core") must name the same cores with the same facts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_inferperf.cli.main import build_parser, main
from pytest_inferperf.core.metrics import TOPDOWN_MODELS
from pytest_inferperf.diagnose.thresholds_by_core import (
    AMBIGUOUS_CORE_NAMES,
    CORE_ALIASES,
    CORE_FAMILY_FALLBACKS,
    CORE_NAME_EXAMPLES,
    CORES,
    check_core,
    core_candidates,
    core_facts,
    known_core,
    resolve_core,
)
from pytest_inferperf.pmu.arm_data import NOT_IMPLEMENTED
from pytest_inferperf.pmu.cpu import ARM_PARTS, INTEL_MODELS, x86_core_name
from pytest_inferperf.pmu.events import CATALOGUE

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "perfstat"


# -- the tables agree --------------------------------------------------------------


def test_every_alias_resolves_to_a_row():
    for alias in CORE_ALIASES:
        assert alias.slug in CORES, alias
        assert resolve_core(alias.name) == alias.slug, alias
        assert check_core(alias.name) is None, alias


def test_product_names_cite_where_they_map_to_a_core():
    products = {
        "graviton2": "neoverse-n1",
        "graviton3": "neoverse-v1",
        "graviton4": "neoverse-v2",
        "altra": "neoverse-n1",
        "cobalt-100": "azure-cobalt-100",
        "yitian-710": "neoverse-n2-r0p0",  # Chips and Cheese; Alibaba's N2 metrics patch
        "raspberry-pi-3": "cortex-a53",
        "raspberry-pi-4": "cortex-a72",
        "raspberry-pi-5": "cortex-a76",
        "kunpeng-920": "hisilicon-tsv110",
        "grace": "neoverse-v2",
        "icelake": "intel-sunnycove",
        "sapphirerapids": "intel-goldencove",
        "kabylake": "intel-skylake",
        "zenplus": "amd-zen+",
    }
    by_name = {a.name: a for a in CORE_ALIASES}
    for name, slug in products.items():
        assert by_name[name].slug == slug, name
        assert len(by_name[name].source) > 20, name  # a product -> core mapping cites


def test_every_core_detection_can_name_has_facts_or_a_fallback():
    for _key, (name, slug) in ARM_PARTS.items():
        assert slug in CORES, (slug, name)
        facts = core_facts(slug)
        assert facts.width is not None and facts.family.startswith("arm"), slug
    for uarch in INTEL_MODELS.values():
        for line in ("core", "xeon"):
            facts = core_facts(f"intel-{line}-{uarch}")
            assert facts.family == "x86" and facts.width is not None, uarch
    # Every AMD family/model the detection names (pmu.cpu: 17h Zen/Zen 2, 19h Zen 3/4,
    # 1Ah Zen 5) reaches a row of its own, never a fallback.
    for family in (0x17, 0x19, 0x1A):
        for model in range(0x00, 0x100, 0x08):
            _name, slug = x86_core_name("AuthenticAMD", family, model, "AMD EPYC 9654")
            facts = core_facts(slug)
            assert facts.width is not None and not facts.fallback, slug


def test_the_unknown_family_is_left_for_truly_unknown_cores():
    assert core_facts("mystery-core").family == "unknown"
    assert core_facts("qualcomm-c00").family == "unknown"  # a part no table names
    assert core_facts("").family == "unknown"
    # A core of a known family, named in a file but not on record, takes the fallback.
    facts = core_facts("neoverse-n4")
    assert (facts.width, facts.fallback) == (5, "Neoverse N")
    assert core_facts("intel-core-pantherlake").fallback == "Intel"
    assert core_facts("intel-pantherlake").fallback == "Intel"


def test_golden_cove_derivatives_take_its_row():
    """Raptor Cove and Redwood Cove are Golden Cove with no major structure resized
    (Chips and Cheese); intel-family.h names which products carry them."""
    for name in (
        "raptorlake",
        "intel-core-raptorlake",
        "meteorlake",
        "Emerald Rapids",
        "intel-xeon-graniterapids",
        "redwoodcove",
    ):
        facts = core_facts(name)
        assert (facts.slug, facts.width, facts.fallback) == ("intel-goldencove", 6, ""), name


def test_every_micro_architecture_detection_names_resolves_typed_bare():
    """'--cpu haswell-x' means what detection's 'intel-xeon-haswell-x' means."""
    for uarch in INTEL_MODELS.values():
        slug = resolve_core(uarch)
        assert slug is not None and check_core(uarch) is None, uarch
        assert core_facts(slug) == core_facts(f"intel-xeon-{uarch}") or (
            core_facts(slug).fallback == core_facts(f"intel-xeon-{uarch}").fallback == "Intel"
        ), uarch


def test_every_row_has_a_width_and_its_source():
    for slug, facts in CORES.items():
        assert facts.slug == slug
        assert facts.width is not None and facts.width > 0, slug
        assert len(facts.width_source) > 20, slug
        assert facts.family in ("arm-basic", "arm-cycles", "arm-topdown", "x86"), slug
        if facts.fallback:
            assert facts.width_source.startswith(f"{facts.fallback} family fallback"), slug
        else:
            assert "fallback" not in facts.width_source, slug


def test_fallback_widths_are_the_narrowest_of_their_family_on_record():
    for family in CORE_FAMILY_FALLBACKS:
        members = [
            c for c in CORES.values() if not c.fallback and re.fullmatch(family.members, c.slug)
        ]
        assert members, family.slug
        facts = core_facts(family.slug)
        assert facts.fallback == family.label
        assert facts.width == min(c.width or 0 for c in members), family.slug
        assert "family fallback" in facts.width_source


def test_lacks_agrees_with_arm_data_where_both_have_the_core():
    for slug, missing in NOT_IMPLEMENTED.items():
        lacks = {n for n, s in CATALOGUE.items() if s.arm and all(c in missing for _, c in s.arm)}
        assert set(CORES[slug].lacks) == lacks, slug


def test_names_users_type_are_unique_and_name_one_row():
    names = [a.name for a in CORE_ALIASES]
    assert len(names) == len(set(names)), "a name is on two rows"
    assert not set(names) & set(CORES), "an alias is another core's slug"
    for slug, facts in CORES.items():
        assert all(a.slug == slug for a in facts.aliases), slug
    # every name on a row folds to that row alone
    for alias in CORE_ALIASES:
        assert core_candidates(alias.name) == (alias.slug,), alias


def test_a_rows_own_penalties_are_known_kinds_with_a_citation():
    from pytest_inferperf.diagnose.cycle_costs import KINDS

    owned = {slug for slug, facts in CORES.items() if facts.penalties}
    assert owned == {
        "neoverse-n1",
        "neoverse-n2",
        "neoverse-n2-r0p0",
        "neoverse-n2-r0p3",
        "intel-sandybridge",
        "intel-haswell",
        "intel-broadwell",
        "intel-skylake",
        "amd-zen",
        "amd-zen+",
        "amd-zen4",
    }
    for slug, facts in CORES.items():
        for kind, penalty in facts.penalties.items():
            assert kind in KINDS, (slug, kind)
            assert penalty.cycles > 0 and not penalty.fallback, (slug, kind)
            assert penalty.label and len(penalty.source) > 20, (slug, kind)


def test_every_micro_architecture_detection_names_has_one_row_or_a_fallback():
    detected = [u for c in CORES.values() for u in c.detected_as]
    assert len(detected) == len(set(detected)), "a micro-architecture on two rows"
    for slug, facts in CORES.items():
        assert not facts.detected_as or facts.family == "x86", slug
    for uarch in INTEL_MODELS.values():
        facts = core_facts(f"intel-xeon-{uarch}")
        row = next((c for c in CORES.values() if uarch in c.detected_as), None)
        if row is not None:
            assert facts is row, uarch
        else:  # no row names it: the Intel family fallback, which says so
            assert facts.fallback == "Intel", uarch


def test_topdown_models_match_the_rows():
    for slug, model in TOPDOWN_MODELS.items():
        # Arm's slot formulas for its top-down cores; AMD's dispatch slots (Zen 4 on)
        want = "x86" if model.dispatched_ops else "arm-topdown"
        assert CORES[slug].family == want, slug
        assert CORES[slug].width == model.slots, slug
    arm = {s for s, m in TOPDOWN_MODELS.items() if not m.dispatched_ops}
    assert {s for s, c in CORES.items() if c.family == "arm-topdown"} == arm
    assert {s for s, m in TOPDOWN_MODELS.items() if m.dispatched_ops} == {"amd-zen4", "amd-zen5"}


def test_ambiguous_names_list_cores_on_record():
    for name, choices in AMBIGUOUS_CORE_NAMES.items():
        assert set(choices) <= set(CORES), name
        assert resolve_core(name) is None and not known_core(name)
        message = check_core(name)
        assert message is not None and "ambiguous" in message
        assert all(c in message for c in choices), name


def test_the_cpu_help_examples_resolve():
    explain = next(
        a
        for a in build_parser()._subparsers._group_actions[0].choices.values()  # type: ignore[union-attr]
        if a.prog.endswith("explain")
    )
    cpu = next(a for a in explain._actions if "--cpu" in a.option_strings)
    for name in CORE_NAME_EXAMPLES:
        assert name in (cpu.help or ""), name
        assert resolve_core(name) in CORES, name


def _doc_table() -> dict[str, tuple[str, str, set[str]]]:
    """docs/diagnosis.md, 'Naming a core': slug -> (width cell, rules cell, names)."""
    text = (ROOT / "docs" / "diagnosis.md").read_text(encoding="utf-8")
    section = text.split("### Naming a core", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[0].startswith("`"):
            continue
        names = set(re.findall(r"`([^`]+)`", cells[4]))
        rows[cells[0].strip("`")] = (cells[2], cells[3], names)
    return rows


def test_the_doc_table_matches_the_tables():
    rows = _doc_table()
    families = {f.slug: core_facts(f.slug) for f in CORE_FAMILY_FALLBACKS}
    assert set(rows) == set(CORES) | set(families)
    for slug, (width, rules, names) in rows.items():
        facts = CORES.get(slug) or families[slug]
        want = f"{facts.width:g}" + (f" ({facts.fallback} fallback)" if facts.fallback else "")
        assert width == want, slug
        assert rules == facts.family, slug
        assert names == {a.name for a in CORE_ALIASES if a.slug == slug}, slug


# -- names as users type them ---------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "slug"),
    [
        ("zen4", "amd-zen4"),
        ("amd-zen4", "amd-zen4"),
        ("Zen 4", "amd-zen4"),
        ("zen+", "amd-zen+"),
        ("skylake", "intel-skylake"),
        ("intel-skylake", "intel-skylake"),
        ("Ice Lake", "intel-sunnycove"),
        ("sapphire_rapids", "intel-goldencove"),
        ("a72", "cortex-a72"),
        ("A72", "cortex-a72"),
        ("cortex a76", "cortex-a76"),
        ("n1", "neoverse-n1"),
        ("Neoverse-N1", "neoverse-n1"),
        ("armv8_cortex_a72", "cortex-a72"),
        ("graviton2", "neoverse-n1"),
        ("Graviton3", "neoverse-v1"),
        ("graviton4", "neoverse-v2"),
        ("altra", "neoverse-n1"),
        ("cobalt-100", "azure-cobalt-100"),
        ("Yitian 710", "neoverse-n2-r0p0"),
        ("yitian710", "neoverse-n2-r0p0"),
        ("n2-r0p3", "neoverse-n2-r0p3"),
        ("kunpeng920", "hisilicon-tsv110"),
        ("TSV110", "hisilicon-tsv110"),
        ("intel-core-skylake", "intel-core-skylake"),  # detection's own form stays
        ("cascadelake", "intel-skylake"),  # model 0x55, later steppings (intel-family.h)
        ("Cascade Lake", "intel-skylake"),
        ("cooperlake", "intel-skylake"),
        ("haswell", "intel-haswell"),  # LLVM X86SchedHaswell.td
        ("Haswell-EP", "intel-haswell"),
        ("broadwell", "intel-broadwell"),
        ("Ivy Bridge", "intel-sandybridge"),  # LLVM X86.td: SandyBridgeModel
        ("westmere", "intel-nehalem"),
        ("tigerlake", "intel-sunnycove"),  # Willow Cove (intel-family.h)
        ("rocketlake", "intel-sunnycove"),  # Cypress Cove
        ("alderlake-l", "intel-goldencove"),  # detection's name, typed bare
        ("raptorlake", "intel-goldencove"),  # Raptor Cove (intel-family.h)
        ("Raptor Lake", "intel-goldencove"),
        ("lunarlake", "intel-lioncove"),  # intel-family.h: Lion Cove / Skymont
        ("Arrow Lake", "intel-lioncove"),
        ("sierraforest", "intel-crestmont"),  # intel_idle.c: ATOM_CRESTMONT_X, srf
        ("Grand Ridge", "intel-crestmont"),
        ("a55+a76", "cortex-a55+cortex-a76"),
        ("neoverse", "neoverse"),
    ],
)
def test_names_users_type_resolve(typed, slug):
    assert resolve_core(typed) == slug
    assert check_core(typed) is None


@given(
    slug=st.sampled_from(sorted(CORES)),
    sep=st.sampled_from(["-", " ", "_", "  ", ""]),
    upper=st.lists(st.booleans(), min_size=40, max_size=40),
)
def test_any_case_and_separator_of_a_slug_resolves_to_it(slug, sep, upper):
    text = "".join(
        c.upper() if u else c for c, u in zip(slug.replace("-", sep), upper, strict=False)
    )
    text += slug.replace("-", sep)[len(upper) :]
    assert resolve_core(text) == slug


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-+_ ", max_size=20))
def test_resolution_never_raises_and_agrees_with_check_core(text):
    slug = resolve_core(text)
    assert (check_core(text) is None) == (slug is not None)
    if slug is not None:
        assert core_facts(slug).family != "unknown"


def test_unknown_and_misspelt_names_are_refused_in_one_paragraph():
    message = check_core("cortex-a27")
    assert message is not None and "\n" not in message
    assert message.startswith("unknown core 'cortex-a27'. Did you mean cortex-a72")
    # an x86 row is offered as users type it, its micro-architecture alone
    assert (check_core("haswel") or "").startswith("unknown core 'haswel'. Did you mean haswell")
    assert "Pass one of them to --cpu" in message


# -- through the real command line ---------------------------------------------------

NOP_LOOP = """
 Performance counter stats for './nop_loop':

          2,500.00 msec task-clock:u                     #    1.000 CPUs utilized
    10,000,000,000      cycles:u
    39,900,000,000      instructions:u

       2.500000000 seconds time elapsed
"""


def _explain_json(capsys, *args: str) -> dict:
    assert main(["explain", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_explain_takes_zen4_as_users_type_it(capsys):
    path = str(FIXTURES / "corpus" / "perfbook_sha256_pipeline_zen4.txt")
    for typed in ("zen4", "amd-zen4", "Zen 4"):
        data = _explain_json(capsys, path, "--cpu", typed)
        assert (data["core"], data["core_from"]) == ("amd-zen4", "--cpu")
    assert _explain_json(capsys, path, "--cpu", "amd-epyc-zen4")["core"] == "amd-epyc-zen4"


@pytest.mark.parametrize("typed", ["skylake", "intel-skylake", "zen+", "icelake", "a72"])
def test_explain_accepts_what_the_issue_saw_refused(typed, capsys):
    data = _explain_json(capsys, str(FIXTURES / "a72_plain.txt"), "--cpu", typed)
    assert data["core"] == resolve_core(typed)


def test_explain_refuses_an_ambiguous_name_with_the_choices(capsys):
    assert main(["explain", str(FIXTURES / "a72_plain.txt"), "--cpu", "graviton"]) == 2
    err = capsys.readouterr().err
    assert "ambiguous" in err and "neoverse-n1, neoverse-v1 or neoverse-v2" in err


def test_ipc_on_an_unnamed_neoverse_is_judged_against_the_fallback_width(tmp_path, capsys):
    path = tmp_path / "nop.txt"
    path.write_text(NOP_LOOP, encoding="utf-8")
    # No core: IPC is never judged.
    data = _explain_json(capsys, str(path))
    assert data["diagnosis"]["primary"] is None
    # An unnamed Neoverse: IPC 3.99 against the Neoverse fallback width 5 (> 0.75 x 5).
    data = _explain_json(capsys, str(path), "--cpu", "neoverse")
    primary = data["diagnosis"]["primary"]
    assert primary["category"] == "retiring"
    evidence = primary["evidence"][0]
    assert (evidence["metric"], evidence["threshold"]) == ("ipc", pytest.approx(3.75))
    assert "Neoverse family fallback: width 5" in evidence["source"]
    # Kunpeng 920 (TSV110), 4 wide: 3.99 > 0.75 x 4.
    data = _explain_json(capsys, str(path), "--cpu", "kunpeng920")
    assert data["core"] == "hisilicon-tsv110"
    assert data["diagnosis"]["primary"]["evidence"][0]["threshold"] == pytest.approx(3.0)


def test_a_neoverse_core_named_in_the_file_takes_the_fallback(tmp_path, capsys):
    path = tmp_path / "nop_n4.txt"
    text = NOP_LOOP.replace("cycles:u      ", "armv8_neoverse_n4/cpu_cycles/u")
    path.write_text(text.replace("instructions:u", "armv8_neoverse_n4/inst_retired/u"))
    data = _explain_json(capsys, str(path))
    assert (data["core"], data["core_from"]) == ("neoverse-n4", "file")
    evidence = data["diagnosis"]["primary"]["evidence"][0]
    assert "Neoverse N family fallback: width 5" in evidence["source"]


# An Asahi Linux run on an M1: Apple's PMUs name their core in the event names
# (drivers/perf/apple_m1_cpu_pmu.c registers apple_icestorm_pmu and apple_firestorm_pmu).
# The counts are made up for the test: IPC 7 on the 8-wide core, 3.5 on the 4-wide one.
ASAHI_RUN = """
 Performance counter stats for './kernel':

     1,000,000,000      apple_{core}_pmu/cycles/
     {instructions}      apple_{core}_pmu/instructions/
       700,000,000      apple_{core}_pmu/branches/
         1,000,000      apple_{core}_pmu/branch-misses/

       0.350000000 seconds time elapsed
"""


@pytest.mark.parametrize(
    ("core", "instructions", "width"),
    [("firestorm", "7,000,000,000", 8), ("icestorm", "3,500,000,000", 4)],
)
def test_an_apple_core_named_by_its_pmu_is_judged_against_its_width(
    core, instructions, width, tmp_path, capsys
):
    path = tmp_path / f"{core}.txt"
    path.write_text(ASAHI_RUN.format(core=core, instructions=instructions), encoding="utf-8")
    data = _explain_json(capsys, str(path))
    assert (data["core"], data["core_from"]) == (f"apple-{core}", "file")
    primary = data["diagnosis"]["primary"]
    assert primary["category"] == "retiring"
    evidence = primary["evidence"][0]
    assert (evidence["metric"], evidence["threshold"]) == ("ipc", pytest.approx(0.75 * width))
    # The PMU counts no cache event: the memory categories say why they are not judged.
    assert "apple_m1_cpu_pmu.c" in data["diagnosis"]["not_judged"]["l1d_residency"]


def test_apple_parts_detection_names_reach_their_rows_or_the_apple_fallback():
    from pytest_inferperf.pmu.cpu import arm_core_name

    assert arm_core_name(0x61, 0x023)[1] == "apple-firestorm"
    assert arm_core_name(0x61, 0x028)[1] == "apple-icestorm"  # M1 Max E-core
    assert core_facts("apple-firestorm").width == 8 and not core_facts("apple-firestorm").fallback
    # An Apple part no table names (a later M-series core) takes the Apple fallback.
    _name, slug = arm_core_name(0x61, 0x048)
    facts = core_facts(slug)
    assert (facts.fallback, facts.width, facts.family) == ("Apple", 4, "arm-basic")
    assert core_candidates("m1") == ("apple-firestorm", "apple-icestorm")


def test_a_detection_form_with_a_micro_architecture_as_users_type_it_takes_its_row():
    # 'intel-xeon-cascadelake' is detection's form with a name users type for the uarch
    # (detection itself says skylake-x: Cascade Lake is model 0x55); never another vendor.
    assert core_facts("intel-xeon-cascadelake").name == "Intel Skylake"
    assert core_facts("intel-xeon-icelake").name == "Intel Sunny Cove (Ice Lake)"
    assert core_facts("intel-xeon-zen4").fallback == "Intel"
