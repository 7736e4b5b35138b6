// Package kubelet is plainkube's node agent: it runs the pods bound to its
// node in containerd and reports them, talking to nothing but the API
// server (client-go) and its container runtime (CRI v1).
//
// New makes an Agent and Run drives it: it starts or connects to
// containerd, registers the Node and renews its Lease, and syncs pods.
// An informer and a relist every SyncInterval queue the node's pods; a
// sync observes the runtime, asks the pure plan (plan.go: no I/O, clock or
// goroutines) what to do — run a sandbox, start, restart after back-off
// or stop a container, remove a finished sandbox, finish a deletion —
// applies it (apply.go) until the plan is empty, and writes the status the
// pure podStatus derives. Static pods join the same queue.
//
// Its rooms, each wired here and importing none of this package:
//
//	runtime       the CRI side: observing pods, sandbox and container configs
//	containerd    runs (or connects to) containerd, its CRI clients
//	network       the pod network's CNI configuration; pod DNS and /etc/hosts
//	volumes       the volume manager: set-up, refresh, clean-up; payloads
//	env           a container's environment, and the downward API values
//	probes        startup, readiness and liveness probes; lifecycle hooks
//	static        static pods from manifest files, mirrored into the API
//	events        upstream's kubelet events, recorded through the API
//	podstatus     pod phase and conditions; nodestatus, the Node's: shared with sim
//	sim           simulated nodes: the agent's API side, no containers
//	server, logs  the agent's HTTPS API: logs, exec/attach/port-forward, stats
//	usage         usage samples and the stats summary
//	tlsbootstrap  joining a node with a bootstrap token
//	atomicwriter  the atomic writer of configMap/secret/projected volumes
package kubelet
