// Package kubelet is plainkube's node agent for real containers: it runs
// the pods bound to its node in containerd, over CRI v1.
//
// An Agent is a client of the API server (client-go, from a *rest.Config)
// and of containerd (k8s.io/cri-client) and of nothing else. New makes one;
// Run drives it until its context ends:
//
//   - Runtime. Unless Options.Runtime hands it a running containerd, Run
//     starts one as a child process under <DataDir>/containerd (package
//     containerd), and imports the pause image plainkube builds itself
//     (package internal/image/pause). Images are never pulled: a container
//     whose image is not in containerd waits in ErrImagePull, then
//     ImagePullBackOff (ErrImageNeverPull for pull policy Never), with a
//     message saying to import it.
//   - Node. It registers the Node (capacity from the host: CPUs, memory,
//     the data directory's file system, 110 pods; an InternalIP and
//     Hostname address; nodeInfo with containerd://<version>; the
//     hostname/os/arch labels, and node-role.kubernetes.io/control-plane
//     when Options.ControlPlane), renews its Lease in kube-node-lease every
//     HeartbeatInterval (10s) and refreshes its conditions every
//     StatusInterval (1m).
//   - Pods. An informer watches the pods with spec.nodeName = the node; a
//     workqueue syncs each one when it changes, and every SyncInterval (1s)
//     all of them are queued again so that container exits are noticed (a
//     relist, as upstream's PLEG). A sync observes the runtime (the pod's
//     sandboxes and containers, found by the io.kubernetes.pod.uid label,
//     and which images are missing), asks the pure function plan what to do
//     — run a sandbox, start a container, restart one per restartPolicy
//     after its CrashLoopBackOff back-off (immediately, then 10s doubling to
//     5m), stop a finished pod's sandbox, or for a pod being deleted stop
//     its containers with the grace period, remove the sandbox and delete
//     the pod with gracePeriodSeconds=0 and a UID precondition — applies
//     the actions, and repeats until the plan is empty. It then writes the
//     status the pure function podStatus derives (phase, conditions,
//     container states with containerd:// IDs, image IDs, restart counts,
//     last termination states, host and pod IPs, start time).
//     Sandboxes of pods that no longer exist are stopped and removed.
//
// What is not there yet: pod networking other than hostNetwork (a pod
// without it needs a CNI configuration in containerd's CNI directory, which
// the agent does not write yet, so its sandbox fails to start), volumes
// (including the service-account token), init containers, probes,
// resources and security contexts, env valueFrom and $(VAR) expansion,
// logs/exec/port-forward through the API server, and images pulled from
// registries.
package kubelet
