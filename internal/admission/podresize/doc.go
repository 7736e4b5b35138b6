// Package podresize is upstream's PodResizeValidator admission plugin (on
// by default, InPlacePodVerticalScaling being GA). A write of pods/resize
// that changes a bound pod (its generation moves) is refused when the
// pod's node is not a Linux node or when the pod's requests no longer fit
// the node's allocatable cpu or memory, with upstream's messages and
// causes (UnsupportedPlatform, NodeCapacity). The node is read from the
// API server's storage.
package podresize
