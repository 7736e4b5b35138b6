package controller

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "example.com/webapp-operator/api/v1"
)

var _ = Describe("WebApp Controller", func() {
	newWebApp := func(namespace, name string) *webappv1.WebApp {
		return &webappv1.WebApp{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec:       webappv1.WebAppSpec{Image: "registry.example/web:1", Replicas: ptr.To[int32](2)},
		}
	}

	It("makes a Deployment owned by the WebApp", func() {
		app := newWebApp("default", "make")
		Expect(k8sClient.Create(ctx, app)).To(Succeed())

		var deploy appsv1.Deployment
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: "make"}, &deploy)
		}).Should(Succeed())
		Expect(*deploy.Spec.Replicas).To(Equal(int32(2)))
		Expect(deploy.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example/web:1"))
		Expect(deploy.OwnerReferences).To(HaveLen(1))
		Expect(deploy.OwnerReferences[0].UID).To(Equal(app.UID))
	})

	It("collects the Deployment and its pods when the WebApp is deleted", func() {
		app := newWebApp("default", "collect")
		Expect(k8sClient.Create(ctx, app)).To(Succeed())
		selector := client.MatchingLabels{"app.kubernetes.io/name": "collect"}
		Eventually(func() ([]corev1.Pod, error) {
			var pods corev1.PodList
			err := k8sClient.List(ctx, &pods, client.InNamespace("default"), selector)
			return pods.Items, err
		}).WithTimeout(30 * time.Second).Should(HaveLen(2))

		deleted := time.Now()
		Expect(k8sClient.Delete(ctx, app)).To(Succeed())
		Eventually(func() bool {
			err := k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: "collect"}, &appsv1.Deployment{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(30 * time.Second).WithPolling(10 * time.Millisecond).Should(BeTrue())
		Eventually(func() ([]corev1.Pod, error) {
			var pods corev1.PodList
			err := k8sClient.List(ctx, &pods, client.InNamespace("default"), selector)
			return pods.Items, err
		}).WithTimeout(30 * time.Second).WithPolling(10 * time.Millisecond).Should(BeEmpty())
		fmt.Printf("deployment and pods collected %v after the WebApp was deleted\n", time.Since(deleted).Round(time.Millisecond))
	})

	It("deletes a namespace with a WebApp in it", func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		Expect(k8sClient.Create(ctx, newWebApp("doomed", "inside"))).To(Succeed())
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: "doomed", Name: "inside"}, &appsv1.Deployment{})
		}).Should(Succeed())

		Expect(k8sClient.Delete(ctx, ns)).To(Succeed())
		Eventually(func() bool {
			err := k8sClient.Get(ctx, types.NamespacedName{Name: "doomed"}, &corev1.Namespace{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(30 * time.Second).Should(BeTrue())
	})
})
