// Package taintnodesbycondition is upstream's TaintNodesByCondition
// admission plugin: a Node being created gets the
// node.kubernetes.io/not-ready:NoSchedule taint, so nothing is scheduled
// to it before the node lifecycle controller has seen it Ready (and
// removed the taint, as it does with every condition's taint).
package taintnodesbycondition
