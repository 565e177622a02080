"""JUnit XML, which every CI renders: one ``<testsuite>`` per assignment, one ``<testcase>``
per check and student (``classname`` = ``<assignment>.<student>``), ``<failure>`` for a failed
or timed-out check, ``<error>`` for a fault of the grader (type ``grader_error``) and for every
check of a submission that could not be graded at all (type ``not_graded``, "notebook broken:
..."), ``<skipped>`` with its reason. Messages are the student-facing texts of results.json."""

import xml.etree.ElementTree as ET

from autograder import reports
from autograder.texts import clean


def junit_xml(batches, lang):
    """The XML document (str) for one or more ``BatchResult``s."""
    root = ET.Element("testsuites", name="autograder")
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    seconds = 0.0
    for batch in batches:
        suite = ET.SubElement(root, "testsuite", name=batch.assignment)
        counts, problems = dict.fromkeys(totals, 0), []
        properties = ET.SubElement(suite, "properties")
        for name, value in (("title", batch.title), ("language", batch.language),
                            ("course", batch.course or ""), ("sandbox", batch.sandbox),
                            ("max_score", reports.fmt(batch.max_score))):
            ET.SubElement(properties, "property", name=name, value=clean(str(value)))
        for result in batch.results:
            data = reports.results_json(result, lang, batch.title)
            classname = f"{batch.assignment}.{reports.student_folder(result.student)}"
            headline = reports.not_graded(result, lang)
            for outcome, test in zip(result.outcomes, data["tests"]):
                counts["tests"] += 1
                case = ET.SubElement(suite, "testcase", name=test["name"], classname=classname)
                text = test["output"]
                first = text.splitlines()[0] if text else outcome.status
                if headline:  # nothing could be graded: an error, never a quiet skip
                    counts["errors"] += 1
                    ET.SubElement(case, "error", message=clean(headline), type="not_graded").text = clean(headline)
                elif outcome.status in ("failed", "timeout"):
                    counts["failures"] += 1
                    ET.SubElement(case, "failure", message=first, type=outcome.status).text = text
                elif outcome.status == "error":
                    counts["errors"] += 1
                    ET.SubElement(case, "error", message=first, type="grader_error").text = text
                elif outcome.status == "skipped":
                    counts["skipped"] += 1
                    ET.SubElement(case, "skipped", message=text)
            problems += [f"{result.student}: {p[lang]}" for p in result.problems]
            if result.report_error:
                problems.append(f"{result.student}: {result.report_error}")
            seconds += result.execution_time
        if problems:  # loading problems: one system-err per suite, after its test cases
            ET.SubElement(suite, "system-err").text = clean("\n".join(problems))
        suite_time = sum(r.execution_time for r in batch.results)
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("time", f"{suite_time:.3f}")
        if batch.timing.get("started"):
            suite.set("timestamp", str(batch.timing["started"]))
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{seconds:.3f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
