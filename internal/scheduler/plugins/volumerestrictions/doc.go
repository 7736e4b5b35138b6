// Package volumerestrictions is the VolumeRestrictions filter, as far as it
// applies to plainkube: two pods on one node may not mount the same
// single-attach disk (GCE PD, AWS EBS, iSCSI, RBD) unless both mount it
// read-only ("node(s) had no available disk"), and a PersistentVolumeClaim
// with the ReadWriteOncePod access mode may be used by one pod only. A
// pod whose claim does not exist is unschedulable.
package volumerestrictions
