"""Rendering verdicts and profiles: terminal tables (and, later, JSON, HTML, Markdown).

A report renders what it is given; it never measures.
"""
