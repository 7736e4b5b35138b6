// Package logs reads container logs as the node agent stores them —
// containerd's CRI log files, one per container attempt, under
// <pod dir>/<container>/<attempt>.log, each line
// "<RFC3339Nano time> <stdout|stderr> <P|F> <message>" — and writes them
// out as `kubectl logs` expects, honouring follow, previous, tailLines,
// sinceTime, limitBytes and timestamps.
package logs
