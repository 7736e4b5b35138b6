package apps

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"plainkube.dev/plainkube/internal/registry"
)

func resource(t *testing.T, plural string) registry.Resource {
	t.Helper()
	for _, r := range Resources() {
		if r.Plural == plural {
			return r
		}
	}
	t.Fatalf("no resource %q", plural)
	return registry.Resource{}
}

// summary renders errors as "path: type: detail" for comparison.
func summary(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s: %s: %s", e.Field, e.Type, e.Detail))
	}
	return out
}

// expectErrors checks that errs are exactly the wanted ones, each given as
// "path: type" optionally followed by ": detail prefix".
func expectErrors(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	got := summary(errs)
	if len(got) != len(want) {
		t.Fatalf("got errors %q, want %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
}

func testDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

func TestDeploymentDefaults(t *testing.T) {
	st := resource(t, "deployments").Strategy
	d := testDeployment()
	st.Default(d)
	quarter := intstr.FromString("25%")
	want := appsv1.DeploymentSpec{
		Replicas: int32Ptr(1),
		Strategy: appsv1.DeploymentStrategy{
			Type:          appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &quarter, MaxSurge: &quarter},
		},
		RevisionHistoryLimit:    int32Ptr(10),
		ProgressDeadlineSeconds: int32Ptr(600),
	}
	got := d.Spec
	if !equality.Semantic.DeepEqual(got.Replicas, want.Replicas) ||
		!equality.Semantic.DeepEqual(got.Strategy, want.Strategy) ||
		!equality.Semantic.DeepEqual(got.RevisionHistoryLimit, want.RevisionHistoryLimit) ||
		!equality.Semantic.DeepEqual(got.ProgressDeadlineSeconds, want.ProgressDeadlineSeconds) {
		t.Errorf("defaulted spec = %+v", got)
	}
	if got.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("template restartPolicy = %q, want Always (pod template defaulted)", got.Template.Spec.RestartPolicy)
	}

	// A Recreate strategy gets no rollingUpdate.
	d = testDeployment()
	d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
	st.Default(d)
	if d.Spec.Strategy.RollingUpdate != nil {
		t.Errorf("Recreate got rollingUpdate %+v", d.Spec.Strategy.RollingUpdate)
	}
}

func TestDeploymentValidate(t *testing.T) {
	st := resource(t, "deployments").Strategy
	zero := intstr.FromInt32(0)
	tests := []struct {
		name   string
		mutate func(*appsv1.Deployment)
		want   []string
	}{
		{name: "valid", mutate: func(*appsv1.Deployment) {}},
		{
			name:   "selector missing",
			mutate: func(d *appsv1.Deployment) { d.Spec.Selector = nil },
			want: []string{
				"spec.selector: Required value",
				"spec.template.metadata.labels: Invalid value: `selector` does not match template `labels`",
			},
		},
		{
			name:   "empty selector",
			mutate: func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} },
			want:   []string{"spec.selector: Invalid value: empty selector is invalid for deployment"},
		},
		{
			name:   "selector does not match template",
			mutate: func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "other"} },
			want:   []string{"spec.template.metadata.labels: Invalid value: `selector` does not match template `labels`"},
		},
		{
			name:   "negative replicas",
			mutate: func(d *appsv1.Deployment) { d.Spec.Replicas = int32Ptr(-1) },
			want:   []string{"spec.replicas: Invalid value: must be greater than or equal to 0"},
		},
		{
			name: "maxSurge and maxUnavailable both 0",
			mutate: func(d *appsv1.Deployment) {
				d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &zero, MaxUnavailable: &zero}
			},
			want: []string{"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: may not be 0 when `maxSurge` is 0"},
		},
		{
			name: "bad percentage",
			mutate: func(d *appsv1.Deployment) {
				v := intstr.FromString("150%")
				d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: &v}
			},
			want: []string{"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: must not be greater than 100%"},
		},
		{
			name:   "unknown strategy",
			mutate: func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "BlueGreen" },
			want:   []string{"spec.strategy: Unsupported value"},
		},
		{
			name: "Recreate with rollingUpdate",
			mutate: func(d *appsv1.Deployment) {
				d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{}}
			},
			want: []string{"spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"},
		},
		{
			name:   "restartPolicy Never",
			mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			want:   []string{`spec.template.spec.restartPolicy: Unsupported value: supported values: "Always"`},
		},
		{
			name:   "activeDeadlineSeconds",
			mutate: func(d *appsv1.Deployment) { five := int64(5); d.Spec.Template.Spec.ActiveDeadlineSeconds = &five },
			want:   []string{"spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"},
		},
		{
			name:   "progress deadline not above minReadySeconds",
			mutate: func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 600 },
			want:   []string{"spec.progressDeadlineSeconds: Invalid value: must be greater than minReadySeconds"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := testDeployment()
			tc.mutate(d)
			st.Default(d)
			st.PrepareForCreate(context.Background(), d)
			expectErrors(t, st.Validate(d), tc.want...)
		})
	}
}

func TestDeploymentUpdate(t *testing.T) {
	st := resource(t, "deployments").Strategy
	old := testDeployment()
	st.Default(old)
	old.Generation = 3

	// The selector is immutable in apps/v1.
	d := old.DeepCopy()
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "x"}}
	d.Spec.Template.Labels["tier"] = "x"
	expectErrors(t, st.ValidateUpdate(d, old), "spec.selector: Invalid value: field is immutable")

	// Scaling is fine.
	d = old.DeepCopy()
	d.Spec.Replicas = int32Ptr(5)
	expectErrors(t, st.ValidateUpdate(d, old))

	// An annotation change bumps the generation; a label change does not.
	d = old.DeepCopy()
	d.Annotations = map[string]string{"note": "x"}
	st.PrepareForUpdate(context.Background(), d, old)
	if d.Generation != 4 {
		t.Errorf("generation after annotation change = %d, want 4", d.Generation)
	}
	d = old.DeepCopy()
	d.Labels = map[string]string{"l": "x"}
	st.PrepareForUpdate(context.Background(), d, old)
	if d.Generation != 3 {
		t.Errorf("generation after label change = %d, want 3", d.Generation)
	}
}

func TestDeploymentStatusUpdate(t *testing.T) {
	st := resource(t, "deployments").Strategy
	old := testDeployment()
	old.Status = appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 2, CollisionCount: int32Ptr(2)}
	tests := []struct {
		name   string
		status appsv1.DeploymentStatus
		want   []string
	}{
		{name: "valid", status: appsv1.DeploymentStatus{Replicas: 3, ReadyReplicas: 2, AvailableReplicas: 1, CollisionCount: int32Ptr(2)}},
		{
			name:   "more ready than replicas",
			status: appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 2, CollisionCount: int32Ptr(2)},
			want:   []string{"status.readyReplicas: Invalid value: cannot be greater than status.replicas"},
		},
		{
			name:   "collision count decremented",
			status: appsv1.DeploymentStatus{CollisionCount: int32Ptr(1)},
			want:   []string{"status.collisionCount: Invalid value: cannot be decremented"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := old.DeepCopy()
			d.Status = tc.status
			expectErrors(t, st.ValidateStatusUpdate(d, old), tc.want...)
		})
	}
}

func TestStatefulSetDefaultsAndUpdate(t *testing.T) {
	st := resource(t, "statefulsets").Strategy
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "postgres"}}},
			},
		},
	}
	st.Default(s)
	if *s.Spec.Replicas != 1 || s.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement ||
		s.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType ||
		*s.Spec.UpdateStrategy.RollingUpdate.Partition != 0 || *s.Spec.RevisionHistoryLimit != 10 ||
		s.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("defaulted spec = %+v", s.Spec)
	}
	expectErrors(t, st.Validate(s))

	u := s.DeepCopy()
	u.Spec.ServiceName = "other"
	expectErrors(t, st.ValidateUpdate(u, s), "spec: Forbidden: updates to statefulset spec for fields other than")
	u = s.DeepCopy()
	u.Spec.Replicas = int32Ptr(3)
	expectErrors(t, st.ValidateUpdate(u, s))
}

func TestDaemonSetTemplateGeneration(t *testing.T) {
	st := resource(t, "daemonsets").Strategy
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "agent"}}},
			},
		},
	}
	st.Default(ds)
	st.PrepareForCreate(context.Background(), ds)
	expectErrors(t, st.Validate(ds))
	if got := ds.Annotations[appsv1.DeprecatedTemplateGeneration]; got != "1" {
		t.Fatalf("template generation on create = %q, want 1", got)
	}
	u := ds.DeepCopy()
	delete(u.Annotations, appsv1.DeprecatedTemplateGeneration)
	u.Spec.Template.Spec.Containers[0].Image = "agent:2"
	st.PrepareForUpdate(context.Background(), u, ds)
	if got := u.Annotations[appsv1.DeprecatedTemplateGeneration]; got != "2" {
		t.Errorf("template generation after template change = %q, want 2", got)
	}
}
