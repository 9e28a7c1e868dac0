"""LLM-judge metrics, the pure part: specs, documented prompts, reply parsing, sample aggregation.

Calling a model, caching and retries live in `evalward.judging`; everything here is a function of models
and strings, so every score can be recomputed from the judge replies shown in a report.

- `spec`: the judged metric names (the table of what each computes), their options and defaults, `JudgeSpec`;
- `prompts`: what a turn shows the judge, the prompt texts and reply schemas, the requests for one turn, a
  whole conversation and a simulated user's message, and `prompt_identity` (part of the judge cache key);
- `hallucinations`: `hallucinations_v1` end to end: the responses checked and their contexts, the
  segmentation and labelling requests, their replies and the fold of a response's samples;
- `replies`: the JSON object in a reply and one sample's verdict from it (the per-sample values);
- `fold`: a turn's value from its s samples (`aggregate`).

Import from those modules: this package re-exports nothing, so a caller loads only the parts it uses.
"""
