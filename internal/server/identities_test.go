package server

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/internal/controllermanager"
)

// TestControllersRunAsTheirServiceAccounts: every controller's kube-system
// ServiceAccount exists, and a controller acts with exactly what its
// account is bound to — with the deployment controller's binding removed
// a Deployment gets no ReplicaSet, and once it is back it does.
func TestControllersRunAsTheirServiceAccounts(t *testing.T) {
	_, cfg := startServer(t)
	cs := clientset(t, cfg)
	ctx := context.Background()
	for _, r := range controllermanager.Registry {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().ServiceAccounts("kube-system").Get(ctx, r.ServiceAccount, metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("ServiceAccount kube-system/%s of the %s controller: not there", r.ServiceAccount, r.Name)
		}
	}

	const binding = "system:controller:deployment-controller"
	crb, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, binding, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, binding, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer follows bindings through a watch: wait until it
	// has seen this one go.
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		review, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:kube-system:deployment-controller",
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "create", Group: "apps", Resource: "replicasets"},
		}}, metav1.CreateOptions{})
		return err == nil && !review.Status.Allowed, nil
	})
	if err != nil {
		t.Fatal("the deployment controller is still allowed to create ReplicaSets without its binding")
	}
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	replicaSets := func() int {
		l, err := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	time.Sleep(3 * time.Second)
	if n := replicaSets(); n != 0 {
		t.Fatalf("the deployment controller made %d ReplicaSets without its binding: it does not act as its ServiceAccount", n)
	}
	crb.ResourceVersion = ""
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller retries with backoff (well under 30 s here).
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return replicaSets() == 1, nil
	})
	if err != nil {
		t.Fatalf("with its binding back, the deployment controller made %d ReplicaSets, want 1", replicaSets())
	}
}
