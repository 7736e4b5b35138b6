package reconcile

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// NodeEventRecorder records the events of component on node host (the
// event's source, as a kubelet's or kube-proxy's) through cs, until ctx
// ends or stop is called.
func NodeEventRecorder(ctx context.Context, cs kubernetes.Interface, component, host string) (rec record.EventRecorder, stop func()) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component, Host: host}), b.Shutdown
}
