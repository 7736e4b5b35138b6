package localpath

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"plainkube.dev/plainkube/internal/api/localpath"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Cleaner removes the folders of a node's deleted local-path volumes.
type Cleaner struct {
	// Client acts as the node.
	Client kubernetes.Interface
	Node   string
	// Dir is the node's local-path folder (its Node's
	// plainkube.dev/local-path-dir annotation).
	Dir string
	Log *slog.Logger
}

// Run watches the node's local-path volumes until ctx ends.
func (c *Cleaner) Run(ctx context.Context) error {
	selector := labels.SelectorFromSet(labels.Set{localpath.NodeLabel: c.Node}).String()
	factory := informers.NewSharedInformerFactoryWithOptions(c.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	inf := factory.Core().V1().PersistentVolumes()
	volumes := inf.Lister()
	q := reconcile.NewQueue[string]("local-path-cleanup")
	defer q.ShutDown()
	enqueue := func(obj any) {
		if pv, ok := obj.(*corev1.PersistentVolume); ok && pv.DeletionTimestamp != nil {
			q.Add(pv.Name)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !reconcile.WaitForCacheSync(ctx, inf.Informer().HasSynced) {
		return ctx.Err()
	}
	reconcile.ProcessQueue(ctx, q, 1, c.log(), func(ctx context.Context, name string) (reconcile.Result, error) {
		return reconcile.Result{}, c.clean(ctx, volumes, name)
	})
	return nil
}

func (c *Cleaner) log() *slog.Logger {
	if c.Log == nil {
		return slog.Default()
	}
	return c.Log
}

// Folder is the folder of pv to remove, "" if none may be: only a pvc-*
// folder directly inside dir.
func Folder(dir string, pv *corev1.PersistentVolume) string {
	if pv.Spec.HostPath == nil || !localpath.FolderIn(dir, pv.Spec.HostPath.Path) {
		return ""
	}
	return pv.Spec.HostPath.Path
}

func (c *Cleaner) clean(ctx context.Context, volumes corelisters.PersistentVolumeLister, name string) error {
	pv, err := volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.DeletionTimestamp == nil || !slices.Contains(pv.Finalizers, localpath.CleanupFinalizer) {
		return nil
	}
	if folder := Folder(c.Dir, pv); folder != "" {
		if err := os.RemoveAll(folder); err != nil {
			return fmt.Errorf("removing the folder of volume %s: %w", name, err)
		}
		c.log().Info("removed the folder of a deleted local-path volume", "volume", name, "path", folder)
	} else {
		path := ""
		if pv.Spec.HostPath != nil {
			path = pv.Spec.HostPath.Path
		}
		c.log().Warn("local-path volume names a path outside the node's local-path folder; left in place", "volume", name, "path", path, "dir", c.Dir)
	}
	out := pv.DeepCopy()
	out.Finalizers = slices.DeleteFunc(out.Finalizers, func(f string) bool { return f == localpath.CleanupFinalizer })
	_, err = c.Client.CoreV1().PersistentVolumes().Update(ctx, out, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone, or changed since: a conflict brings a new event.
		return nil
	}
	return err
}
