// Prints every Kubernetes feature gate this release knows, one per line:
// "<name> <stage> <default> <locked>", for the package lists in templates/packages/.
// The binaries' --help hides GA and deprecated gates, which a user may still set.
package main

import (
	"fmt"
	"sort"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	_ "k8s.io/kubernetes/pkg/features"
)

func main() {
	all := utilfeature.DefaultMutableFeatureGate.GetAll()
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		spec := all[featuregate.Feature(name)]
		stage := string(spec.PreRelease)
		if stage == "" {
			stage = "GA"
		}
		fmt.Printf("%s %s %t %t\n", name, stage, spec.Default, spec.LockToDefault)
	}
}
