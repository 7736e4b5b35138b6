// Package limitranger is the LimitRanger admission plugin: the
// LimitRanges of a namespace fill in each new pod's containers' missing
// requests and limits (their Container items' defaultRequest and default,
// noted in the kubernetes.io/limit-ranger annotation), and refuse pods
// and PersistentVolumeClaims outside their min, max and
// maxLimitRequestRatio for a Container, a Pod or a claim, with upstream's
// messages ("maximum cpu usage per Container is 1, but limit is 2").
//
// As upstream, pods are checked when created (a pod's resources do not
// change by update), claims when created and updated. LimitRanges are
// read from an informer over the API server's loopback client.
package limitranger
