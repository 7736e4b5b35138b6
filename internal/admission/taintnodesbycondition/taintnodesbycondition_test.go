package taintnodesbycondition

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"plainkube.dev/plainkube/internal/admission"
)

func TestNotReadyTaint(t *testing.T) {
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	other := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	notReadyExecute := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
	nodes := corev1.SchemeGroupVersion.WithResource("nodes")
	for _, tt := range []struct {
		name  string
		op    admission.Operation
		sub   string
		given []corev1.Taint
		want  []corev1.Taint
	}{
		{"new node", admission.Create, "", nil, []corev1.Taint{notReady}},
		{"new node with its own taint", admission.Create, "", []corev1.Taint{other}, []corev1.Taint{other, notReady}},
		{"already tainted", admission.Create, "", []corev1.Taint{notReady}, []corev1.Taint{notReady}},
		{"NoExecute is another taint", admission.Create, "", []corev1.Taint{notReadyExecute}, []corev1.Taint{notReadyExecute, notReady}},
		{"update", admission.Update, "", nil, nil},
		{"status update", admission.Update, "status", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			node := &corev1.Node{Spec: corev1.NodeSpec{Taints: tt.given}}
			a := &admission.Attributes{Operation: tt.op, Resource: nodes, Subresource: tt.sub, Object: node}
			if err := (admission.Chain{New()}).Mutate(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(node.Spec.Taints, tt.want) {
				t.Errorf("taints %+v, want %+v", node.Spec.Taints, tt.want)
			}
		})
	}
}
