"""Function executors of workflow_notes.toml: one string in (the step's JSON input), one string out."""

import json


def compose(task_json: str) -> str:
    """Joins the research step's notes into one answer, with the number of notes used."""
    task = json.loads(task_json)
    notes = [
        f"- {o['executor_name']}: {o['content'].strip()}"
        for outputs in task["previous_steps"].values()
        for o in outputs
        if o["status"] == "SUCCESS"
    ]
    return "Answer built from {} notes:\n{}".format(len(notes), "\n".join(notes))
