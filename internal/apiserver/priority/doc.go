// Package priority is API Priority and Fairness's configuration as the
// API server acts on it: which FlowSchema a request matches (by
// matchingPrecedence, then name), which flow of it the request belongs to
// (its distinguisher: the user, the namespace, or none), and how many
// seats each PriorityLevelConfiguration gets of the server's concurrency
// limit (its nominalConcurrencyShares' part of all limited levels'
// shares, as upstream's nominal limit). It is pure: package apiserver
// holds the seats and queues, and internal/server feeds it the stored
// objects (upstream's bootstrap configuration until they are read).
package priority
