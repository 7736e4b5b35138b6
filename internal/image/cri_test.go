package image_test

import runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

func criImage(ref string) *runtimeapi.ImageSpec { return &runtimeapi.ImageSpec{Image: ref} }
