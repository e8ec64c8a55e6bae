"""Where inferperf writes when nothing says where: the default folder names.

Owns: the names of the baselines folder and of the report folder, one each for the
plugin (under the rootdir) and the commands (under the current folder).

Must not: import anything: the plugin reads these at start-up, in every pytest run.
"""

#: The baselines folder: ``<rootdir>/baselines`` for the plugin, ``./baselines`` for
#: ``inferperf accept``.
BASELINES_DIR = "baselines"
#: The report folder (reports, flamegraphs): ``<rootdir>/inferperf-report`` for the
#: plugin, ``./inferperf-report`` for the commands.
REPORT_DIR = "inferperf-report"
