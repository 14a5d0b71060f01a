"""The GeneratorChat demo's shared facts, for both AG2 demos (1.x and Classic): the workflow,
its config file, the user's opening line and answers, the agents' scripted lines and the
variables its planner saves."""

from pathlib import Path

__all__ = [
    "DEMO_CONFIG",
    "DEMO_WORKFLOW",
    "HANDOFFS_LINES",
    "INTERVIEW_LINES",
    "OPENING",
    "PLANNED",
    "PLANNER_REPLY",
    "USER_ANSWERS",
]

DEMO_WORKFLOW = "GeneratorChat"
DEMO_CONFIG = (
    Path(__file__).resolve().parents[2] / "contextadmin" / "demo" / "ag2_context_variables.json"
)
OPENING = "I want to build a product. Help me set up its workflow."
PLANNED = "product_tier,max_items,concept_overview,context_aware,interview_complete,context_saved"
USER_ANSWERS = ("A marketplace for freelance translators.", "Publishers pay a monthly fee.")
INTERVIEW_LINES = (  # "NEXT" flips interview_complete: hand-off 0
    "Hi! Tell me about the product you want to build.",
    "Who pays, the translators or the publishers?",
    "NEXT",
)
PLANNER_REPLY = "Declared the context variables."  # after its save_context_plan call
HANDOFFS_LINES = (
    "Drafting the hand-off rules.",
    "Reviewed: InterviewAgent -> ContextVariablesAgent -> HandoffsAgent.",
)
