// Package usage is how the node agent measures resource usage: a Sample of
// cumulative counters is read every stats.Interval (the node's CPU time and
// memory from /proc by ReadNode, each container's from the runtime), and
// Summarize turns the newest sample and the one before it into the summary
// API's stats.Summary, as upstream's kubelet derives usageNanoCores: the CPU
// time used between two samples divided by the time between them.
package usage
