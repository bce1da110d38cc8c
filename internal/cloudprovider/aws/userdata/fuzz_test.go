package userdata

import (
	"testing"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
)

// FuzzRender checks that no spec.userData makes Validate or Render panic,
// and that user data Validate accepts also renders.
func FuzzRender(f *testing.F) {
	for _, s := range []string{shellUserData, mimeUserData, nodeConfigUserData, bottlerocketUserData, windowsUserData, "", "MIME-Version: 1.0\n"} {
		f.Add(s)
	}
	families := []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyCustom}
	f.Fuzz(func(t *testing.T, s string) {
		for _, family := range families {
			o := baseOptions(family)
			o.CustomUserData = &s
			verr := Validate(family, s)
			_, rerr := RenderRaw(o)
			if verr == nil && rerr != nil && IsInvalidUserData(rerr) {
				t.Errorf("%s: Validate accepted %q but Render rejected it: %v", family, s, rerr)
			}
		}
	})
}
