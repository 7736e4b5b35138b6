// Package ownerreferences is upstream's OwnerReferencesPermissionEnforcement
// admission plugin (off by default; --enable-admission-plugins turns it
// on). A create or update that changes an object's ownerReferences needs
// the right to delete the object (updates only, as upstream); one that
// makes an ownerReference blockOwnerDeletion needs the right to update the
// owner's finalizers subresource, checked for every resource serving the
// owner's kind (found through the API server's resources, as upstream's
// REST mapper). pods/status is exempt, as upstream's.
package ownerreferences
