package thirdparty_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	crdv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	clientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapshotscheme "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/scheme"
	informers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	controller "github.com/kubernetes-csi/external-snapshotter/v8/pkg/common-controller"
	"github.com/kubernetes-csi/external-snapshotter/v8/pkg/metrics"
	"github.com/kubernetes-csi/external-snapshotter/v8/pkg/utils"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"plainkube.dev/plainkube/pkg/testenv"
)

const driver = "hostpath.csi.k8s.io"

func TestMain(m *testing.M) {
	// The controller logs through klog: quiet unless THIRDPARTY_LOG sets a
	// verbosity.
	if v := os.Getenv("THIRDPARTY_LOG"); v != "" { // klog verbosity, e.g. 5
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		fs.Set("v", v)
	} else {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		fs.Set("logtostderr", "false")
		fs.Set("alsologtostderr", "false")
		fs.Set("stderrthreshold", "FATAL")
		klog.SetOutput(io.Discard)
	}
	os.Exit(m.Run())
}

// The snapshot types join client-go's global scheme before any test starts
// a control plane: registering them later raced with the in-process
// components decoding through the same scheme (a fatal concurrent map
// write, seen once in CI).
func init() { utilruntime.Must(snapshotscheme.AddToScheme(scheme.Scheme)) }

// runSnapshotController wires and runs the snapshot controller as its
// cmd/snapshot-controller main does, over HTTPS with cfg (protobuf for the
// built-in types, JSON for its CRDs), until the test ends.
func runSnapshotController(t *testing.T, cfg *rest.Config) {
	t.Helper()
	const resync = 15 * time.Minute
	coreConfig := rest.CopyConfig(cfg)
	coreConfig.ContentType = runtime.ContentTypeProtobuf
	kubeClient := kubernetes.NewForConfigOrDie(coreConfig)
	snapClient := clientset.NewForConfigOrDie(cfg)
	factory := informers.NewSharedInformerFactory(snapClient, resync)
	coreFactory := coreinformers.NewSharedInformerFactory(kubeClient, resync)

	limiter := func() workqueue.TypedRateLimiter[string] {
		return workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 5*time.Second)
	}
	ctrl := controller.NewCSISnapshotCommonController(
		snapClient,
		kubeClient,
		factory.Snapshot().V1().VolumeSnapshots(),
		factory.Snapshot().V1().VolumeSnapshotContents(),
		factory.Snapshot().V1().VolumeSnapshotClasses(),
		factory.Groupsnapshot().V1().VolumeGroupSnapshots(),
		factory.Groupsnapshot().V1().VolumeGroupSnapshotContents(),
		factory.Groupsnapshot().V1().VolumeGroupSnapshotClasses(),
		coreFactory.Core().V1().PersistentVolumeClaims(),
		coreFactory.Core().V1().PersistentVolumes(),
		nil, // no distributed snapshotting
		metrics.NewMetricsManager(),
		resync,
		limiter(), limiter(), limiter(), limiter(),
		false, // enableDistributedSnapshotting
		true,  // preventVolumeModeConversion
		true,  // enableVolumeGroupSnapshots
	)
	stop := make(chan struct{})
	factory.Start(stop)
	coreFactory.Start(stop)
	done := make(chan struct{})
	go func() { defer close(done); ctrl.Run(2, stop, nil) }()
	t.Cleanup(func() {
		close(stop)
		<-done
		factory.Shutdown()
		coreFactory.Shutdown()
	})
}

type fixture struct {
	env  *testenv.Env
	kube kubernetes.Interface
	snap clientset.Interface
}

func setup(t *testing.T) *fixture {
	env := testenv.Start(t, testenv.WithControllers(), testenv.WithCRDs("testdata/crd"))
	runSnapshotController(t, env.Config)
	return &fixture{env: env, kube: kubernetes.NewForConfigOrDie(env.Config), snap: clientset.NewForConfigOrDie(env.Config)}
}

// eventually polls cond every 50ms for up to 30s until it returns true;
// the error it returns meanwhile is reported if time runs out.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within 30s (last: %v)", what, last)
	}
}

// actAsSidecar does what the CSI sidecar does once the storage driver has
// cut the snapshot: it reports it in the content's status subresource.
func (f *fixture) actAsSidecar(t *testing.T, contentName, handle string, size int64) {
	t.Helper()
	ctx := context.Background()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		c, err := f.snap.SnapshotV1().VolumeSnapshotContents().Get(ctx, contentName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		c.Status = &crdv1.VolumeSnapshotContentStatus{
			SnapshotHandle: ptr.To(handle),
			CreationTime:   ptr.To(time.Now().UnixNano()),
			RestoreSize:    ptr.To(size),
			ReadyToUse:     ptr.To(true),
		}
		_, err = f.snap.SnapshotV1().VolumeSnapshotContents().UpdateStatus(ctx, c, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("setting VolumeSnapshotContent %s status: %v", contentName, err)
	}
}

// waitSnapshotReady waits until the snapshot is bound and ready to use.
func (f *fixture) waitSnapshotReady(t *testing.T, ns, name string) *crdv1.VolumeSnapshot {
	t.Helper()
	var snap *crdv1.VolumeSnapshot
	eventually(t, "VolumeSnapshot "+name+" ready", func(ctx context.Context) (bool, error) {
		var err error
		snap, err = f.snap.SnapshotV1().VolumeSnapshots(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := snap.Status
		return s != nil && s.BoundVolumeSnapshotContentName != nil && ptr.Deref(s.ReadyToUse, false) && s.RestoreSize != nil,
			fmt.Errorf("status %+v", s)
	})
	return snap
}

// waitFinalizer waits until the VolumeSnapshot default/name has finalizer.
func (f *fixture) waitFinalizer(t *testing.T, name, finalizer string) {
	t.Helper()
	eventually(t, "VolumeSnapshot "+name+" has finalizer "+finalizer, func(ctx context.Context) (bool, error) {
		got, err := f.snap.SnapshotV1().VolumeSnapshots("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.Contains(got.Finalizers, finalizer), fmt.Errorf("finalizers %v", got.Finalizers)
	})
}

func (f *fixture) waitGone(t *testing.T, what string, get func(ctx context.Context) error) {
	t.Helper()
	eventually(t, what+" gone", func(ctx context.Context) (bool, error) {
		err := get(ctx)
		return apierrors.IsNotFound(err), err
	})
}

// TestPreProvisionedSnapshot: an existing snapshot (a VolumeSnapshotContent
// with a snapshotHandle) and a VolumeSnapshot naming it are bound to each
// other; the status the sidecar reports reaches the VolumeSnapshot; with
// deletionPolicy Retain, deleting the VolumeSnapshot leaves the content.
func TestPreProvisionedSnapshot(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	content := &crdv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: "existing"},
		Spec: crdv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{Namespace: "default", Name: "restored"},
			DeletionPolicy:    crdv1.VolumeSnapshotContentRetain,
			Driver:            driver,
			Source:            crdv1.VolumeSnapshotContentSource{SnapshotHandle: ptr.To("snap-0001")},
		},
	}
	if _, err := f.snap.SnapshotV1().VolumeSnapshotContents().Create(ctx, content, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vs := &crdv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "restored"},
		Spec:       crdv1.VolumeSnapshotSpec{Source: crdv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr.To("existing")}},
	}
	vs, err := f.snap.SnapshotV1().VolumeSnapshots("default").Create(ctx, vs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	eventually(t, "content bound to the snapshot's UID", func(ctx context.Context) (bool, error) {
		c, err := f.snap.SnapshotV1().VolumeSnapshotContents().Get(ctx, "existing", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return c.Spec.VolumeSnapshotRef.UID == vs.UID, fmt.Errorf("volumeSnapshotRef %+v", c.Spec.VolumeSnapshotRef)
	})
	f.actAsSidecar(t, "existing", "snap-0001", 1<<30)
	got := f.waitSnapshotReady(t, "default", "restored")
	if *got.Status.BoundVolumeSnapshotContentName != "existing" || got.Status.RestoreSize.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Fatalf("status %+v", got.Status)
	}
	f.waitFinalizer(t, "restored", utils.VolumeSnapshotAsSourceFinalizer)

	if err := f.snap.SnapshotV1().VolumeSnapshots("default").Delete(ctx, "restored", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitGone(t, "VolumeSnapshot", func(ctx context.Context) error {
		_, err := f.snap.SnapshotV1().VolumeSnapshots("default").Get(ctx, "restored", metav1.GetOptions{})
		return err
	})
	if _, err := f.snap.SnapshotV1().VolumeSnapshotContents().Get(ctx, "existing", metav1.GetOptions{}); err != nil {
		t.Fatalf("a Retain content went with its snapshot: %v", err)
	}
}

// TestDynamicSnapshot: a VolumeSnapshot of a bound CSI PVC makes the
// controller create a VolumeSnapshotContent from the class (and protect
// the PVC with a finalizer while the snapshot is cut); when the sidecar
// reports it ready the VolumeSnapshot is ready and the PVC released; with
// deletionPolicy Delete, deleting the VolumeSnapshot deletes its content.
func TestDynamicSnapshot(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	class := &crdv1.VolumeSnapshotClass{
		ObjectMeta:     metav1.ObjectMeta{Name: "csi-hostpath"},
		Driver:         driver,
		DeletionPolicy: crdv1.VolumeSnapshotContentDelete,
	}
	if _, err := f.snap.SnapshotV1().VolumeSnapshotClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A PVC bound to a CSI PV, as the PV controller and a provisioner
	// would leave them.
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName:  "pv-data",
		},
	}
	pvc, err := f.kube.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-data"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "data", UID: pvc.UID},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "vol-0001"}},
		},
	}
	if _, err := f.kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The PVC protection controller adds its finalizer meanwhile, so the
	// status write retries on a conflict with the claim read afresh.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pvc, err := f.kube.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			return err
		}
		pvc.Status.Phase = corev1.ClaimBound
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
		_, err = f.kube.CoreV1().PersistentVolumeClaims("default").UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	vs := &crdv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "backup"},
		Spec: crdv1.VolumeSnapshotSpec{
			Source:                  crdv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data")},
			VolumeSnapshotClassName: ptr.To("csi-hostpath"),
		},
	}
	vs, err = f.snap.SnapshotV1().VolumeSnapshots("default").Create(ctx, vs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	contentName := "snapcontent-" + string(vs.UID)
	var content *crdv1.VolumeSnapshotContent
	eventually(t, "the controller creates "+contentName, func(ctx context.Context) (bool, error) {
		var err error
		content, err = f.snap.SnapshotV1().VolumeSnapshotContents().Get(ctx, contentName, metav1.GetOptions{})
		return err == nil, err
	})
	if got := ptr.Deref(content.Spec.Source.VolumeHandle, ""); got != "vol-0001" || content.Spec.Driver != driver ||
		content.Spec.DeletionPolicy != crdv1.VolumeSnapshotContentDelete || content.Spec.VolumeSnapshotRef.UID != vs.UID ||
		ptr.Deref(content.Spec.VolumeSnapshotClassName, "") != "csi-hostpath" {
		t.Fatalf("content spec %+v", content.Spec)
	}
	eventually(t, "the PVC protected while the snapshot is cut", func(ctx context.Context) (bool, error) {
		pvc, err := f.kube.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.Contains(pvc.Finalizers, utils.PVCFinalizer), fmt.Errorf("finalizers %v", pvc.Finalizers)
	})

	f.actAsSidecar(t, contentName, "snap-0002", 1<<30)
	got := f.waitSnapshotReady(t, "default", "backup")
	if *got.Status.BoundVolumeSnapshotContentName != contentName {
		t.Fatalf("bound to %q, want %q", *got.Status.BoundVolumeSnapshotContentName, contentName)
	}
	// Bound to a Delete-policy content, the snapshot is protected until the
	// content has gone.
	f.waitFinalizer(t, "backup", utils.VolumeSnapshotBoundFinalizer)
	eventually(t, "the PVC released once the snapshot is ready", func(ctx context.Context) (bool, error) {
		pvc, err := f.kube.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return !slices.Contains(pvc.Finalizers, utils.PVCFinalizer), fmt.Errorf("finalizers %v", pvc.Finalizers)
	})

	if err := f.snap.SnapshotV1().VolumeSnapshots("default").Delete(ctx, "backup", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller deletes the content; its finalizer keeps it until the
	// sidecar has deleted the snapshot from storage, and the VolumeSnapshot
	// stays until the content is gone.
	f.actAsSidecarOnDelete(t, contentName)
	f.waitGone(t, "its Delete-policy VolumeSnapshotContent", func(ctx context.Context) error {
		_, err := f.snap.SnapshotV1().VolumeSnapshotContents().Get(ctx, contentName, metav1.GetOptions{})
		return err
	})
	f.waitGone(t, "VolumeSnapshot", func(ctx context.Context) error {
		_, err := f.snap.SnapshotV1().VolumeSnapshots("default").Get(ctx, "backup", metav1.GetOptions{})
		return err
	})
}

// actAsSidecarOnDelete does what the CSI sidecar does for a content being
// deleted: once the controller has marked it (annotation, deletion
// timestamp) it deletes the snapshot from storage and removes the content's
// finalizer.
func (f *fixture) actAsSidecarOnDelete(t *testing.T, contentName string) {
	t.Helper()
	eventually(t, "content "+contentName+" marked for deletion and released", func(ctx context.Context) (bool, error) {
		c, err := f.snap.SnapshotV1().VolumeSnapshotContents().Get(ctx, contentName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if c.DeletionTimestamp == nil || c.Annotations[utils.AnnVolumeSnapshotBeingDeleted] != "yes" {
			return false, fmt.Errorf("deletionTimestamp %v, annotations %v", c.DeletionTimestamp, c.Annotations)
		}
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(s string) bool { return s == utils.VolumeSnapshotContentFinalizer })
		_, err = f.snap.SnapshotV1().VolumeSnapshotContents().Update(ctx, c, metav1.UpdateOptions{})
		return err == nil, err
	})
}

// TestMissingContentIsReported: a VolumeSnapshot naming a content that does
// not exist gets an error in its status and a Warning event, through the
// controller's event recorder.
func TestMissingContentIsReported(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	vs := &crdv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "orphan"},
		Spec:       crdv1.VolumeSnapshotSpec{Source: crdv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr.To("nowhere")}},
	}
	if _, err := f.snap.SnapshotV1().VolumeSnapshots("default").Create(ctx, vs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "status.error set", func(ctx context.Context) (bool, error) {
		got, err := f.snap.SnapshotV1().VolumeSnapshots("default").Get(ctx, "orphan", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Status != nil && got.Status.Error != nil && got.Status.Error.Message != nil, fmt.Errorf("status %+v", got.Status)
	})
	eventually(t, "a Warning event about the snapshot", func(ctx context.Context) (bool, error) {
		evs, err := f.kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=orphan"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == "VolumeSnapshot" {
				t.Logf("event: %s: %s", e.Reason, e.Message)
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events", len(evs.Items))
	})
}
