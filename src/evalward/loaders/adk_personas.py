"""The user personas ADK 2.13 ships (`EXPERT`, `NOVICE`, `EVALUATOR`), for scenarios that name one by id.

ADK resolves `"user_persona": "NOVICE"` through its default persona registry; an unknown id is an error.
The ids and the traits each persona combines are ADK's; the wording below is evalward's own summary of
them, so a simulated user (and its judge) reads evalward's text, not ADK's.
"""

from __future__ import annotations

from evalward.model import UserBehavior, UserPersona

_ADVANCE_STEPWISE = UserBehavior(
    name="Advance step by step",
    description="Moves to the next request of the plan only once the agent has fully handled the current one, "
    "and checks the details of what the agent did.",
    behavior_instructions=[
        "Give the agent one request of the plan at a time.",
        "Before moving on, check that the agent's result matches the details the plan asks for.",
    ],
    violation_rubrics=[
        "The user moves on although the agent's result misses a detail the plan asks for.",
        "The user asks for more than one request of the plan in one message.",
    ],
)
_ADVANCE_GOALS = UserBehavior(
    name="Advance towards the goal",
    description="Cares about reaching each goal of the plan, not about every detail of how the agent gets there.",
    behavior_instructions=[
        "Give the agent one goal of the plan at a time.",
        "Move on once the goal is reached, even if the agent took a roundabout way.",
    ],
    violation_rubrics=["The user asks for more than one goal of the plan in one message."],
)
_ANSWER_RELEVANT = UserBehavior(
    name="Answer only what matters",
    description="Answers the agent's questions that the plan covers and declines the rest.",
    behavior_instructions=[
        "Answer questions using only information from the plan.",
        "Say you do not know when the plan does not cover a question; never invent an answer.",
    ],
    violation_rubrics=["The user invents information that is not in the plan."],
)
_ANSWER_ALL = UserBehavior(
    name="Answer every question",
    description="Patiently answers every question the agent asks, from the plan where it can.",
    behavior_instructions=[
        "Answer each of the agent's questions.",
        "Say you do not know when the plan does not cover a question; never invent an answer.",
    ],
    violation_rubrics=[
        "The user leaves one of the agent's questions unanswered.",
        "The user invents information that is not in the plan.",
    ],
)
_CORRECTS = UserBehavior(
    name="Correct the agent",
    description="Points out the agent's mistakes and asks it to fix them, once.",
    behavior_instructions=[
        "When the agent states something wrong or does the wrong thing, say so and ask for a fix.",
        "If the agent fails a second time, end the conversation with the stop signal.",
    ],
    violation_rubrics=[
        "The agent made a mistake and the user carried on as if it had not.",
        "The agent failed twice and the user did not end the conversation.",
    ],
)
_DOES_NOT_CORRECT = UserBehavior(
    name="Do not troubleshoot",
    description="Cannot tell how to fix the agent's mistakes and gives up when the agent fails.",
    behavior_instructions=[
        "Do not explain to the agent how to fix a mistake.",
        "When the agent fails, end the conversation with the stop signal.",
    ],
    violation_rubrics=[
        "The user tells the agent how to fix its mistake.",
        "The agent failed and the user did not end the conversation.",
    ],
)
_ENDS_WHEN_DONE = UserBehavior(
    name="End at the right time",
    description="Ends the conversation with the stop signal once the agent has confirmed every goal of the plan, "
    "hands the user to a human, or has failed as described above; never earlier.",
    behavior_instructions=[
        "Wait for the agent to confirm every goal of the plan before ending.",
        "End by writing the stop signal.",
    ],
    violation_rubrics=[
        "The conversation should have ended but the user did not write the stop signal.",
        "The user wrote the stop signal while goals of the plan were still open and the agent had not failed.",
    ],
)
_PROFESSIONAL = UserBehavior(
    name="Professional tone",
    description="Writes short, precise, technical messages (the stop signal is fine).",
    behavior_instructions=["Be brief and precise; no slang, emojis or small talk."],
    violation_rubrics=["The message uses slang, emojis, small talk or far more words than needed."],
)
_CASUAL = UserBehavior(
    name="Casual tone",
    description="Writes like a person chatting, informal and brief (the stop signal is fine).",
    behavior_instructions=["Sound like an ordinary person chatting; not stiff, not overly polite, not a wall of text."],
    violation_rubrics=["The message is stiff, overly formal, or a wall of text where a sentence would do."],
)

PREBUILT_PERSONAS: dict[str, UserPersona] = {
    "EXPERT": UserPersona(
        id="EXPERT",
        description="An expert who knows exactly what they want, uses the agent as a tool and has no patience "
        "for small talk or needless questions.",
        behaviors=[_ADVANCE_STEPWISE, _ANSWER_RELEVANT, _CORRECTS, _ENDS_WHEN_DONE, _PROFESSIONAL],
    ),
    "NOVICE": UserPersona(
        id="NOVICE",
        description="A novice with a problem they do not fully understand, who relies on the agent's guidance, "
        "answers its questions patiently, and cannot correct it.",
        behaviors=[_ADVANCE_GOALS, _DOES_NOT_CORRECT, _ANSWER_ALL, _ENDS_WHEN_DONE, _CASUAL],
    ),
    "EVALUATOR": UserPersona(
        id="EVALUATOR",
        description="An evaluator checking whether the agent can reach the goals of the plan.",
        behaviors=[_ADVANCE_STEPWISE, _ANSWER_RELEVANT, _ENDS_WHEN_DONE, _DOES_NOT_CORRECT, _CASUAL],
    ),
}
"""ADK's prebuilt persona ids, each with evalward's description of it."""
