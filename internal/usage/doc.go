// Package usage keeps model spend in bounds and reports it: the budgets of
// BOT_CONFIG checked before a question reaches the model (Gate), the price
// table that turns tokens into an estimated cost (Prices), and the totals
// of the usage report (Report). Everything is counted from the turns in
// the session store, so replicas on one store share their counts.
//
// Periods are UTC days and months: a daily budget resets at 00:00 UTC,
// a monthly one at 00:00 UTC on the first of the month.
//
// It imports only internal/session, internal/llm and internal/config.
package usage
