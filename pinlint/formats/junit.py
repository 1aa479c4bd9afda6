"""JUnit XML: one test suite per file with findings, one failing test case per finding (a single passing
case when there are none), for CI systems that show test reports."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from itertools import groupby
from typing import TextIO

from ..report import ReportOptions


def write(findings: list, out: TextIO, options: ReportOptions) -> None:
    root = ET.Element("testsuites", name="pinlint", tests=str(max(len(findings), 1)), failures=str(len(findings)),
                      errors="0")
    if not findings:
        suite = ET.SubElement(root, "testsuite", name="pinlint", tests="1", failures="0", errors="0", skipped="0")
        ET.SubElement(suite, "testcase", name="No findings", classname="pinlint")
    for filename, group in groupby(findings, key=lambda f: f.filename):
        group = list(group)
        suite = ET.SubElement(root, "testsuite", name=filename, tests=str(len(group)), failures=str(len(group)),
                              errors="0", skipped="0")
        for finding in group:
            where = f"cell {finding.cell}, " if finding.cell is not None else ""
            where += f"line {finding.location.row}, col {finding.location.column}"
            case = ET.SubElement(suite, "testcase", name=f"pinlint.{finding.code}", classname=filename,
                                 file=filename, line=str(finding.location.row))
            failure = ET.SubElement(case, "failure", message=finding.message, type=finding.code)
            failure.text = f"{where}: {finding.code} {finding.message}"
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")
