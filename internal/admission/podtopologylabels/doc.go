// Package podtopologylabels is upstream's PodTopologyLabels admission
// plugin (on by default, its PodTopologyLabelsAdmission gate being beta
// and on in v1.37). When a pod is bound to a node, through pods/binding
// or by being created with spec.nodeName set, the node's
// topology.kubernetes.io/zone and topology.kubernetes.io/region labels
// are copied onto it: onto the Binding, whose labels the binding handler
// then writes onto the pod, or onto the pod being created. The node is
// read from the API server's storage; a node that does not exist copies
// nothing.
package podtopologylabels
