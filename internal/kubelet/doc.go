// Package kubelet is plainkube's node agent for real containers: it runs
// the pods bound to its node in containerd, over CRI v1.
//
// An Agent is a client of the API server (client-go, from a *rest.Config)
// and of containerd (k8s.io/cri-client) and of nothing else. New makes one;
// Run drives it until its context ends:
//
//   - Runtime. Unless Options.Runtime hands it a running containerd, or
//     Options.RuntimeEndpoint names one already running (used through CRI,
//     never started or stopped; the agent writes its CNI network into the
//     conf_dir it reports, or Options.CNIConfDir), Run starts one as a
//     child process under <DataDir>/containerd (package containerd). It
//     imports the pause image plainkube builds itself (package
//     internal/image/pause; into an external containerd also under the
//     sandbox image name it is configured with). Images are never pulled: a container
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
//   - Init containers run one at a time, in order, each to success, before
//     the others start (a failed one restarts with back-off, or with
//     restartPolicy Never fails the pod); the pod is Pending and not
//     Initialized meanwhile, its containers waiting in PodInitializing.
//     A sidecar (an init container with restartPolicy Always) lets the
//     next one start once it has started, is restarted whatever its exit,
//     is ready while it runs, and is stopped once the pod's containers are
//     done. Sidecars are probed as the others; one with a startup probe
//     lets the next start once that has succeeded. On deletion, sidecars
//     stop after the others, with what is left of the grace period.
//   - Pod network (cni.go). The Node's spec.podCIDR — set at registration
//     from Options.PodCIDR when given and the Node has none, else
//     allocated by the node IPAM controller, which the agent waits for,
//     checking every second — becomes a CNI configuration list in
//     containerd's CNI directory: a bridge per pod range (pk<network in hex>) (gateway, IP masquerade,
//     hairpin) with host-local addresses over the pod CIDR (state under
//     <DataDir>/cni/ipam), portmap for hostPorts (the sandbox's port
//     mappings) and loopback. A pod not on the host network gets its own
//     address, reported as podIP/podIPs. Without a pod CIDR only
//     hostNetwork pods can start.
//   - Volumes (volumes.go, volumemanager.go, tokens.go): all of a pod's
//     volumes are set up before its sandbox starts; while one cannot be
//     (a ConfigMap or Secret missing and not optional, a token the API
//     refuses) the pod stays Pending, its containers ContainerCreating, a
//     FailedMount Warning event (source kubelet, host the node) says
//     `MountVolume.SetUp failed for volume "x" : …`, and the set-up is
//     retried (1s doubling to 8s). Under <DataDir>/volumes/<pod uid>/:
//     emptyDir (a directory on disk; a tmpfs for medium Memory, sized by
//     sizeLimit, the pod's memory limit or the node's allocatable memory;
//     a disk emptyDir over its sizeLimit gets the pod evicted: Failed,
//     reason Evicted, upstream's message and a DisruptionTarget
//     condition), configMap, secret, downwardAPI (pod metadata fields and
//     container resources with divisors) and projected (configMap,
//     secret, downwardAPI and serviceAccountToken sources; tokens come
//     from the TokenRequest API, bound to the pod, and are renewed after
//     80% of their life or 24h) — every key or the items, with
//     defaultMode and item modes, fsGroup ownership, optional sources.
//     Those four are written by package atomicwriter (a timestamped
//     directory, a ..data symlink swapped by rename, user-visible
//     symlinks), secret, downwardAPI and projected on a tmpfs each, and
//     are rewritten from the API every VolumeResyncInterval (30s) and on
//     label or annotation changes, so running containers see updates at
//     once (not through subPath mounts, as upstream). hostPath has its
//     type checks and the OrCreate types. Mounts are CRI bind mounts with
//     readOnly, subPath and subPathExpr ($(VAR) of the container's
//     environment); API volumes are always read-only. A pod's
//     volume directories go when the pod is deleted.
//   - Environment (env.go): envFrom (configMap, secret, prefix), env with
//     value, configMapKeyRef, secretKeyRef (optional ones may be missing),
//     fieldRef (metadata name, namespace, uid, labels, annotations and
//     their ['key'] forms, spec.nodeName, spec.serviceAccountName,
//     status.podIP(s), status.hostIP(s)) and resourceFieldRef
//     (limits/requests of cpu, memory, ephemeral-storage and hugepages,
//     with divisor; a limit not set is the node's allocatable), then the
//     service variables (<NAME>_SERVICE_HOST, _PORT and the Docker link
//     ones) of the default namespace's "kubernetes" Service and, unless
//     enableServiceLinks is false, of the Services of the pod's namespace,
//     with upstream's $(VAR) expansion in env values, command and args. A
//     container whose environment refers to something missing waits in
//     CreateContainerConfigError (with the reason as message) and starts
//     once it is there.
//   - Probes (probe.go): startup, readiness and liveness probes (exec,
//     httpGet, tcpSocket, grpc — the grpc.health.v1 service) of running
//     containers run during syncs when due (initialDelaySeconds,
//     periodSeconds, timeoutSeconds, success and failure thresholds).
//     Readiness and liveness probes wait for the startup probe to
//     succeed; the container is started then, and ready once its
//     readiness probe succeeds. One whose liveness or startup probe fails
//     is stopped (Killing "Container X failed liveness probe, will be
//     restarted") and restarted as its restart policy says. Each failed
//     run records an Unhealthy event ("Liveness probe failed: …").
//   - Hooks (hooks.go): postStart (exec, httpGet, sleep) runs right after
//     the container starts, which counts as started only once it is done;
//     a failed one (FailedPostStartHook) kills the container. Every stop
//     (deletion, probe failure, a finished pod's sidecars, the active
//     deadline) runs the preStop hook first, within the grace period,
//     then SIGTERM and, at the end of what is left (at least 2s),
//     SIGKILL, with a Killing event.
//   - Termination messages (podfiles.go): a file per container attempt
//     under <DataDir>/pod-files/<pod uid>/ is bind-mounted at
//     terminationMessagePath (default /dev/termination-log); what the
//     container leaves there (up to 4 KiB), or with
//     FallbackToLogsOnError and a failure the tail of its log (80 lines,
//     2 KiB), becomes state.terminated.message.
//   - activeDeadlineSeconds: past it (from status.startTime) the pod is
//     Failed, reason DeadlineExceeded, and its containers are stopped.
//   - Security and resources (security.go): runAsUser/runAsGroup (pod
//     defaults, container overrides), supplementalGroups and fsGroup,
//     runAsNonRoot (checked against the image's user: a refusal is a
//     CreateContainerConfigError), readOnlyRootFilesystem, capabilities,
//     privileged (the sandbox too), allowPrivilegeEscalation false as
//     no_new_privs; cpu shares from requests, CFS quota from cpu limits,
//     the memory limit, and upstream's OOM score by QoS class. hostPID,
//     hostIPC and shareProcessNamespace are CRI namespace options.
//   - Names (dns.go): the sandbox's DNS config follows dnsPolicy and
//     dnsConfig as upstream (ClusterFirst uses Options.ClusterDNS, and
//     without it falls back to Default — the node's resolv.conf — with a
//     MissingClusterDNS event); pods not on the host network get an
//     /etc/hosts the agent writes (localhost lines, the pod's IP and
//     hostname, or hostname.subdomain.<ns>.svc.<domain>, and
//     hostAliases).
//   - Events (events.go): Pulled, Created, Started, Killing, Unhealthy,
//     BackOff, Failed, FailedPostStartHook, FailedPreStopHook,
//     FailedCreatePodSandBox, DeadlineExceeded, from component "kubelet"
//     with the node as host; those of waiting states are recorded when a
//     container's status changes to them.
//   - Node status lists the images containerd holds (names and sizes,
//     largest first, at most 50).
//   - Agent API (package server, when Options.IssueServingCert is set):
//     container logs, and exec, attach and port forwarding (stream.go:
//     the running container or ready sandbox is found by the pod's
//     namespace and name labels, and CRI hands out a URL of containerd's
//     streaming server, which listens on 127.0.0.1 only).
//   - Static pods (static.go): with Options.ManifestsDir, every Pod file
//     there (YAML or JSON; names starting with a dot are skipped, folders
//     not entered) is read every SyncInterval and run without the API
//     server — they start before the node is registered, and Run keeps
//     retrying the registration meanwhile. As upstream, a static pod is
//     named <name>-<node>, in namespace default unless it names one, has
//     its UID and kubernetes.io/config.hash annotation from a hash of the
//     pod, the node and the file path, config.source "file", config.seen,
//     tolerates every NoExecute taint, and is defaulted and validated as
//     the API would. Once the API answers, each gets a mirror pod there (the
//     config.mirror annotation set to the hash, a controller owner
//     reference to the Node) carrying its status. The agent never runs a
//     mirror pod; it deletes one whose static pod is gone or changed, or
//     that is being deleted, and creates it again. An edited file stops
//     the old version (with its grace period) before the new one starts; a
//     removed file stops the pod.
//   - Usage (usage.go): every stats.Interval the agent samples /proc and
//     the runtime's container stats; the agent API serves the summary at
//     /stats/summary, which the API server turns into metrics.k8s.io, and
//     as Prometheus metrics at /metrics/resource.
//   - Agent API (package server): its HTTPS API, authorized by the API
//     server (SubjectAccessReview on nodes/<subresource>) for each caller,
//     serves logs, exec/attach/port-forward, /pods (agentapi.go: the
//     API's pods of the node and the static pods), /stats/summary and
//     /metrics (running pods and containers, pod start latency, syncs).
//
// What is not there yet: persistent volumes (and every other volume
// type); clusterTrustBundle and podCertificate projections;
// fsGroupChangePolicy (ownership is always applied); seccomp and
// AppArmor profiles; and images pulled from registries.
package kubelet
