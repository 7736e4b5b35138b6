package pvcprotection

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"plainkube.dev/plainkube/internal/controller/controllertest"
)

func TestProtection(t *testing.T) {
	cfg := controllertest.StartServer(t)
	cs := controllertest.Clientset(t, cfg)
	ctx := context.Background()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Logger = controllertest.Logger(t)
	controllertest.Run(t, c, 2)

	claims := cs.CoreV1().PersistentVolumeClaims("default")
	if _, err := claims.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller adds the finalizer the admission plugin would have.
	controllertest.Eventually(t, "the finalizer", func() (bool, error) {
		c, err := claims.Get(ctx, "data", metav1.GetOptions{})
		return err == nil && slices.Contains(c.Finalizers, Finalizer), err
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "user"}, Spec: corev1.PodSpec{NodeName: "n1",
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		Volumes:    []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := claims.Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if c, err := claims.Get(ctx, "data", metav1.GetOptions{}); err != nil || c.DeletionTimestamp == nil {
		t.Fatalf("claim in use: %v %v", c, err)
	}
	zero := int64(0)
	if err := cs.CoreV1().Pods("default").Delete(ctx, "user", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "the unused claim gone", func() (bool, error) {
		_, err := claims.Get(ctx, "data", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
