// Package instanceprofile gives an EC2NodeClass the IAM instance profile its
// instances launch with.
//
// A class that names spec.instanceProfile uses that profile as is; the
// package only checks that it exists. A class that names spec.role gets an
// instance profile owned by Dovetail: its name is derived from the cluster,
// the region and the class's name and UID
// (<cluster>_<hash(region, name, uid)>), its path is
// /karpenter/<region>/<cluster>/<uid>/, it carries the cluster's ownership
// tags plus spec.tags, and it holds exactly the named role.
//
// Why a derived name: the profile can be found again without any state but
// the class itself. A profile created for a class whose role then failed to
// attach, or whose spec later switched to instanceProfile, is still deleted
// when the class is finalized, because Delete recomputes the same name.
package instanceprofile
