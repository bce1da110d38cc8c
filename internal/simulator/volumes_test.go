package simulator_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

func TestVolumeTopology(t *testing.T) {
	pod := func(name string) *dtesting.PodWrapper { return dtesting.MakePod(name).Req("cpu", "1") }
	gp3 := "gp3"
	none := ""
	pvc := func(name, pv string) *corev1.PersistentVolumeClaim { return dtesting.MakePVC(name, pv, &gp3) }
	twoTermPV := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-multi"},
		Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{nsr(zoneKey, corev1.NodeSelectorOpIn, fake.Zone1)}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{nsr(zoneKey, corev1.NodeSelectorOpIn, fake.Zone2)}},
		}}}},
	}
	spread := sel("app", "db")
	runCases(t, map[string]tcase{
		"bound zonal volume pins the zone": {
			pvs: []*corev1.PersistentVolume{dtesting.MakeZonalPV("pv-1", fake.Zone2)}, pvcs: []*corev1.PersistentVolumeClaim{pvc("data", "pv-1")},
			pods: []*corev1.Pod{pod("p").PVC("data").Obj()}, claims: 1, check: zonesOf(map[string]string{"p": fake.Zone2}),
		},
		"volume zone conflicts with the pod's zone": {
			pvs: []*corev1.PersistentVolume{dtesting.MakeZonalPV("pv-1", fake.Zone2)}, pvcs: []*corev1.PersistentVolumeClaim{pvc("data", "pv-1")},
			pods: []*corev1.Pod{pod("p").PVC("data").NodeSelector(zoneKey, fake.Zone1).Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "conflict with the topology of its volumes (persistentvolume pv-1)"},
		},
		"unbound claim follows its StorageClass topology": {
			scs: []*storagev1.StorageClass{dtesting.MakeStorageClass(gp3, false, fake.Zone3)}, pvcs: []*corev1.PersistentVolumeClaim{pvc("data", "")},
			pods: []*corev1.Pod{pod("p").PVC("data").Obj()}, claims: 1, check: zonesOf(map[string]string{"p": fake.Zone3}),
		},
		"unbound claim of a class without topology is unconstrained": {
			scs: []*storagev1.StorageClass{dtesting.MakeStorageClass(gp3, false)}, pvcs: []*corev1.PersistentVolumeClaim{pvc("data", "")},
			pods: []*corev1.Pod{pod("p").PVC("data").Obj()}, claims: 1, check: zonesOf(map[string]string{"p": ""}),
		},
		"claim without a class uses the default class": {
			scs:  []*storagev1.StorageClass{dtesting.MakeStorageClass("standard", true, fake.Zone1), dtesting.MakeStorageClass(gp3, false, fake.Zone3)},
			pvcs: []*corev1.PersistentVolumeClaim{dtesting.MakePVC("data", "", nil)},
			pods: []*corev1.Pod{pod("p").PVC("data").Obj()}, claims: 1, check: zonesOf(map[string]string{"p": fake.Zone1}),
		},
		"claim with the empty class is unconstrained": {
			scs:  []*storagev1.StorageClass{dtesting.MakeStorageClass("standard", true, fake.Zone1)},
			pvcs: []*corev1.PersistentVolumeClaim{dtesting.MakePVC("data", "", &none)},
			pods: []*corev1.Pod{pod("p").PVC("data").Obj()}, claims: 1, check: zonesOf(map[string]string{"p": ""}),
		},
		"missing claim": {
			pods: []*corev1.Pod{pod("p").PVC("data").Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "persistentvolumeclaim default/data not found"},
		},
		"missing StorageClass": {
			pvcs: []*corev1.PersistentVolumeClaim{pvc("data", "")},
			pods: []*corev1.Pod{pod("p").PVC("data").Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "storageclass gp3 of claim default/data not found"},
		},
		"missing volume of a bound claim": {
			pvcs: []*corev1.PersistentVolumeClaim{pvc("data", "pv-gone")},
			pods: []*corev1.Pod{pod("p").PVC("data").Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "persistentvolume pv-gone"},
		},
		"ephemeral volume follows its template's class": {
			scs:  []*storagev1.StorageClass{dtesting.MakeStorageClass(gp3, false, fake.Zone2)},
			pods: []*corev1.Pod{pod("p").EphemeralVolume("scratch", gp3).Obj()}, claims: 1, check: zonesOf(map[string]string{"p": fake.Zone2}),
		},
		"volumes in two zones cannot be mounted together": {
			pvs:  []*corev1.PersistentVolume{dtesting.MakeZonalPV("pv-1", fake.Zone1), dtesting.MakeZonalPV("pv-2", fake.Zone2)},
			pvcs: []*corev1.PersistentVolumeClaim{pvc("a", "pv-1"), pvc("b", "pv-2")},
			pods: []*corev1.Pod{pod("p").PVC("a").PVC("b").Obj()}, claims: 0,
			unschedulable: map[string]string{"p": "topology of its volumes"},
		},
		"volume with alternative zones": {
			pvs: []*corev1.PersistentVolume{twoTermPV}, pvcs: []*corev1.PersistentVolumeClaim{pvc("data", "pv-multi")},
			pods: []*corev1.Pod{pod("p").PVC("data").NodeSelector(zoneKey, fake.Zone2).Obj()}, claims: 1, check: zonesOf(map[string]string{"p": fake.Zone2}),
		},
		"volume zone places the pod on an existing node there": {
			nodes: []simulator.Node{existing("n1", fake.Zone1), existing("n2", fake.Zone2)},
			pvs:   []*corev1.PersistentVolume{dtesting.MakeZonalPV("pv-1", fake.Zone2)}, pvcs: []*corev1.PersistentVolumeClaim{pvc("data", "pv-1")},
			pods: []*corev1.Pod{pod("p").PVC("data").Obj()}, claims: 0, placed: map[string]string{"p": "n2"},
		},
		"volume zones decide where a zone spread puts each pod": {
			pvs:  []*corev1.PersistentVolume{dtesting.MakeZonalPV("pv-0", fake.Zone3), dtesting.MakeZonalPV("pv-1", fake.Zone1), dtesting.MakeZonalPV("pv-2", fake.Zone2)},
			pvcs: []*corev1.PersistentVolumeClaim{pvc("data-0", "pv-0"), pvc("data-1", "pv-1"), pvc("data-2", "pv-2")},
			pods: []*corev1.Pod{
				pod("db-0").Label("app", "db").ZoneSpread(1, spread).PVC("data-0").Obj(),
				pod("db-1").Label("app", "db").ZoneSpread(1, spread).PVC("data-1").Obj(),
				pod("db-2").Label("app", "db").ZoneSpread(1, spread).PVC("data-2").Obj(),
			},
			claims: 3, check: zonesOf(map[string]string{"db-0": fake.Zone3, "db-1": fake.Zone1, "db-2": fake.Zone2}),
		},
		"volume zone against a zone spread that is already full there": {
			pvs:  []*corev1.PersistentVolume{dtesting.MakeZonalPV("pv-0", fake.Zone1), dtesting.MakeZonalPV("pv-1", fake.Zone1)},
			pvcs: []*corev1.PersistentVolumeClaim{pvc("data-0", "pv-0"), pvc("data-1", "pv-1")},
			pods: []*corev1.Pod{
				pod("db-0").Label("app", "db").ZoneSpread(1, spread).PVC("data-0").Obj(),
				pod("db-1").Label("app", "db").ZoneSpread(1, spread).PVC("data-1").Obj(),
			},
			claims: 1, unschedulable: map[string]string{"db-1": "topology spread on topology.kubernetes.io/zone"},
		},
	})
}
