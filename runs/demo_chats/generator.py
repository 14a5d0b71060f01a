"""The GeneratorChat demo's shared facts, for both AG2 demos (1.x and Classic): the workflow,
its config file, the user's opening line and the variables its planner saves."""

from pathlib import Path

__all__ = ["DEMO_CONFIG", "DEMO_WORKFLOW", "OPENING", "PLANNED"]

DEMO_WORKFLOW = "GeneratorChat"
DEMO_CONFIG = (
    Path(__file__).resolve().parents[2] / "contextadmin" / "demo" / "ag2_context_variables.json"
)
OPENING = "I want to build a product. Help me set up its workflow."
PLANNED = "product_tier,max_items,concept_overview,context_aware,interview_complete,context_saved"
