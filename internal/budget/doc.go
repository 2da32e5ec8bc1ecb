// Package budget keeps a model's prompt within its context window: it
// estimates a request's prompt tokens from byte sizes (EstimateTokens),
// learns per model how far that estimate is from what the server reports
// (Calibrator), picks a default budget from the model's name
// (DefaultBudget), and shrinks a history that is over budget while keeping
// it valid for the API (Compact).
//
// Everything here is a pure function of messages, or of a small
// mutex-guarded table; nothing blocks or does I/O. It works on
// internal/llm's message types and must import no other internal package:
// the session store, the agent loop and the front ends all call it, so it
// sits below them.
package budget
