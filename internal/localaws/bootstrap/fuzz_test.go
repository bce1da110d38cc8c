package bootstrap

import "testing"

// FuzzParse checks that no input makes Parse panic, whatever the family.
func FuzzParse(f *testing.F) {
	for _, s := range []string{al2023MIME, al2023YAML, al2MIME, al2Custom, bottlerocketTOML, windowsPS, "", "'", "<powershell>-EKSClusterName '"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, family := range []string{"", "AL2", "AL2023", "Bottlerocket", "Windows2022"} {
			_, _ = Parse([]byte(s), family)
		}
	})
}
