// Package tainttoleration is the TaintToleration plugin. As a filter it
// rejects nodes with a NoSchedule or NoExecute taint the pod does not
// tolerate ("node(s) had untolerated taint {key: value}"); as a score it
// prefers nodes with fewer PreferNoSchedule taints the pod does not
// tolerate.
package tainttoleration
