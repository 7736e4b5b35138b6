// Package podsecurity is the PodSecurity admission plugin: the Pod
// Security Standards (privileged, baseline, restricted) a namespace asks
// for in its pod-security.kubernetes.io/{enforce,audit,warn}[-version]
// labels, evaluated by upstream's published library
// (k8s.io/pod-security-admission), so levels, checks and messages are
// upstream's word for word. enforce refuses a pod that violates it
// (`pods "x" is forbidden: violates PodSecurity "restricted:latest": …`),
// warn answers Warning headers, audit adds audit annotations; workload
// resources (Deployments, Jobs…) get warnings and annotations only; a
// namespace whose enforce level is tightened warns about the pods already
// there that would violate it. A namespace without labels is privileged.
//
// Exemptions (usernames, namespaces, runtime classes) come from the
// server's --pod-security-exempt-* flags, named after upstream's admission
// configuration. Namespaces are read from an informer over the API
// server's loopback client; pods, when a namespace's level changes,
// through that client.
package podsecurity
