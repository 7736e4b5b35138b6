// Package interpodaffinity is the InterPodAffinity plugin. As a filter it
// enforces required pod affinity (the node's topology domain must hold a
// pod matching every term — or, for the first pod of a group that matches
// its own terms, no such pod may exist anywhere), required pod
// anti-affinity (no matching pod in the domain), and the required
// anti-affinity of pods already running (the new pod may not land in the
// domain of a pod that repels it). As a score it sums the weights of
// preferred terms, both the new pod's and those of running pods, per
// topology domain, and normalizes them to [0, 100].
package interpodaffinity
