package node

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/reconcile"
)

// Populate keeps g up to date from the informers of f (pods and
// PersistentVolumes, PodCertificateRequests) and returns what reports that both have synced. The
// caller starts f.
func Populate(g *Graph, f informers.SharedInformerFactory) (synced func() bool, err error) {
	podInf := f.Core().V1().Pods().Informer()
	if err := podInf.SetTransform(slimPod); err != nil {
		return nil, err
	}
	if _, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { setPod(g, obj) },
		UpdateFunc: func(_, obj any) { setPod(g, obj) },
		DeleteFunc: func(obj any) {
			if p, ok := reconcile.DeletedObject[*corev1.Pod](obj); ok {
				g.DeletePod(p.Namespace, p.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	pvInf := f.Core().V1().PersistentVolumes().Informer()
	if _, err := pvInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { setVolume(g, obj) },
		UpdateFunc: func(_, obj any) { setVolume(g, obj) },
		DeleteFunc: func(obj any) {
			if pv, ok := reconcile.DeletedObject[*corev1.PersistentVolume](obj); ok {
				g.DeleteVolume(pv.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	pcrInf := f.Certificates().V1().PodCertificateRequests().Informer()
	if _, err := pcrInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { setPodCertificateRequest(g, obj) },
		UpdateFunc: func(_, obj any) { setPodCertificateRequest(g, obj) },
		DeleteFunc: func(obj any) {
			if r, ok := reconcile.DeletedObject[*certificatesv1.PodCertificateRequest](obj); ok {
				g.DeletePodCertificateRequest(r.Namespace, r.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	return func() bool { return podInf.HasSynced() && pvInf.HasSynced() && pcrInf.HasSynced() }, nil
}

func setPodCertificateRequest(g *Graph, obj any) {
	if r, ok := obj.(*certificatesv1.PodCertificateRequest); ok {
		g.SetPodCertificateRequest(r.Namespace, r.Name, string(r.Spec.NodeName))
	}
}

func setPod(g *Graph, obj any) {
	if p, ok := obj.(*corev1.Pod); ok {
		g.SetPod(p)
	}
}

func setVolume(g *Graph, obj any) {
	if pv, ok := obj.(*corev1.PersistentVolume); ok {
		g.SetVolume(pv)
	}
}

// slimPod keeps of a pod only what the graph reads (its name, node,
// references and claim statuses), so the API server holds little per pod
// for it.
func slimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	slim := &corev1.Pod{}
	slim.Name, slim.Namespace, slim.UID, slim.ResourceVersion = p.Name, p.Namespace, p.UID, p.ResourceVersion
	slim.Spec.NodeName = p.Spec.NodeName
	slim.Spec.ServiceAccountName = p.Spec.ServiceAccountName
	slim.Spec.ImagePullSecrets = p.Spec.ImagePullSecrets
	slim.Spec.Volumes = p.Spec.Volumes
	slim.Spec.InitContainers = envOnly(p.Spec.InitContainers)
	slim.Spec.Containers = envOnly(p.Spec.Containers)
	for _, c := range p.Spec.EphemeralContainers {
		e := corev1.EphemeralContainer{}
		e.Name, e.Env, e.EnvFrom = c.Name, c.Env, c.EnvFrom
		slim.Spec.EphemeralContainers = append(slim.Spec.EphemeralContainers, e)
	}
	slim.Status.ResourceClaimStatuses = p.Status.ResourceClaimStatuses
	return slim, nil
}

func envOnly(cs []corev1.Container) []corev1.Container {
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Env: c.Env, EnvFrom: c.EnvFrom}
	}
	return out
}
