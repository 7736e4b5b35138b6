// Package balancedallocation is the NodeResourcesBalancedAllocation score:
// it prefers nodes whose CPU and memory would be used in equal fractions
// with the pod there (score = (1 - standard deviation of the fractions) *
// 100). Pods that request nothing are not scored by it.
package balancedallocation
