package controller

import apierrors "k8s.io/apimachinery/pkg/api/errors"

// IgnoreNotFound is err, or nil when err says the object is gone: a write
// to an object deleted meanwhile has nothing left to do.
func IgnoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
