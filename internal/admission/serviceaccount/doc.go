// Package serviceaccount is upstream's ServiceAccount admission plugin for
// pod creates: it sets spec.serviceAccountName to "default" when empty,
// rejects a pod whose service account does not exist (403 "error looking
// up service account NS/NAME: …", after retrying the "default" account for
// up to about two seconds, since the service-account controller creates it
// just after its namespace), and, unless automountServiceAccountToken is
// false (on the pod, else on the service account), adds the projected
// volume kube-api-access-XXXXX (a bound token for 3607 s, the cluster CA
// from the kube-root-ca.crt ConfigMap, the namespace) mounted read-only at
// /var/run/secrets/kubernetes.io/serviceaccount in every container and
// init container that has nothing mounted there. Image pull secrets of the
// service account are copied to a pod that has none.
//
// Mirror pods (annotation kubernetes.io/config.mirror) are not changed; they
// may not name a service account, refer to secrets or project a token, as
// upstream.
//
// Not here: updates (upstream checks ephemeral containers' mounts) and the
// enforce-mountable-secrets annotation.
package serviceaccount
