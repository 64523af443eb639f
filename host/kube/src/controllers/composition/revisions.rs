//! What a Composition's revisions should be, decided from the Composition,
//! its revisions and the XRs that use them, without asking the cluster:
//! the hash of a state, the digests its steps run, a new revision's name,
//! labels and spec, the changes that make the latest revision match the
//! Composition ([`plan`]), and which old revisions may go ([`collectable`]).

use std::collections::{BTreeMap, BTreeSet};

use plait_functions::{DIGESTS_ANNOTATION, Pin, Pins};
use plait_model::composition_hash::{
    HashError, upstream_composition_hash, upstream_revision_hash_label, upstream_revision_name,
};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::{LABEL_COMPOSITION_HASH, LABEL_COMPOSITION_NAME};
use crate::vocabulary::api::{COMPOSITION_API_VERSION, COMPOSITION_KIND, REVISION_KIND};
use crate::vocabulary::object::text;

/// Revisions kept besides the latest when a Composition sets no
/// `revisionHistoryLimit`, as upstream defaults it.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i64 = 1;

fn map_of(object: &Value, pointer: &str) -> Map<String, Value> {
    object
        .pointer(pointer)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Whether `composition` runs upstream v1's patch-and-transform: `mode:
/// Resources`, or no mode and resources to compose (upstream v1's default).
fn is_resources_mode(composition: &Value) -> bool {
    match composition.pointer("/spec/mode").and_then(Value::as_str) {
        Some(mode) => mode == "Resources",
        None => composition
            .pointer("/spec/resources")
            .and_then(Value::as_array)
            .is_some_and(|resources| !resources.is_empty()),
    }
}

/// The hash identifying a state of `composition`. A Pipeline-mode
/// Composition hashes as upstream hashes it, so the revisions upstream made
/// are recognised as plait's. Upstream's hash leaves out `mode: Resources`
/// fields (`spec.resources`, `patchSets`, ...), which its v2 types no longer
/// have, so a Resources-mode Composition hashes as SHA-256 over the
/// canonical (key-sorted) JSON of its labels, annotations and spec instead,
/// and an edit of its resources makes a new revision.
pub fn revision_hash(composition: &Value) -> Result<String, HashError> {
    if !is_resources_mode(composition) {
        return upstream_composition_hash(composition);
    }
    let part = |pointer: &str| {
        composition
            .pointer(pointer)
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or_else(|| json!({}))
    };
    let canonical = json!([
        part("/metadata/labels"),
        part("/metadata/annotations"),
        part("/spec"),
    ]);
    Ok(hex::encode(Sha256::digest(canonical.to_string())))
}

/// The functions `composition`'s pipeline steps run, by step: each as it
/// resolves now (`current`), or, while that is not known (its Function
/// is not installed or not healthy, or missing), as the latest revision
/// recorded it, so a failing Function makes no new revision and the
/// digest XRs run stays the last one that worked.
pub fn desired_pins(
    composition: &Value,
    latest: &Pins,
    current: impl Fn(&str) -> Option<Pin>,
) -> Pins {
    let mut pins = BTreeMap::new();
    for (step, function) in pipeline_steps(composition) {
        let pin = current(function).or_else(|| {
            latest
                .0
                .get(step)
                .filter(|pin| pin.function == function)
                .cloned()
        });
        if let Some(pin) = pin {
            pins.insert(step.to_string(), pin);
        }
    }
    Pins(pins)
}

/// `(step, functionRef.name)` of each step of a Pipeline-mode Composition
/// (a `mode: Resources` one runs the built-in patch-and-transform).
pub(super) fn pipeline_steps(composition: &Value) -> Vec<(&str, &str)> {
    composition
        .pointer("/spec/pipeline")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| Some((s["step"].as_str()?, s["functionRef"]["name"].as_str()?)))
        .collect()
}

/// Whether `composition`'s pipeline runs `function`.
pub(super) fn runs(composition: &Value, function: &str) -> bool {
    pipeline_steps(composition)
        .iter()
        .any(|(_, f)| *f == function)
}

/// Revision `number` of `composition` as it stands, hashed `hash`, named
/// `name` and running `pins`: labelled and annotated as upstream makes it
/// (the Composition's labels copied last, so they win on a clash, but for
/// the hash label), plus the digests its steps run.
pub fn new_revision(
    composition: &Value,
    hash: &str,
    pins: &Pins,
    name: &str,
    number: i64,
) -> Value {
    let composition_name = text(composition, "/metadata/name").unwrap_or_default();
    let mut labels = Map::new();
    labels.insert(LABEL_COMPOSITION_NAME.into(), json!(composition_name));
    labels.insert(
        LABEL_COMPOSITION_HASH.into(),
        json!(upstream_revision_hash_label(hash)),
    );
    labels.extend(map_of(composition, "/metadata/labels"));
    // The one label the Composition's own cannot replace: a revision is
    // found again by its state's hash, and a Composition carrying a stale
    // hash label would otherwise never find the revision just made.
    labels.insert(
        LABEL_COMPOSITION_HASH.into(),
        json!(upstream_revision_hash_label(hash)),
    );
    let mut annotations = map_of(composition, "/metadata/annotations");
    if !pins.is_empty() {
        annotations.insert(DIGESTS_ANNOTATION.into(), json!(pins.annotation()));
    }
    let mut spec = map_of(composition, "/spec");
    // How many revisions to keep concerns the Composition, not a revision.
    spec.remove("revisionHistoryLimit");
    spec.insert("revision".into(), json!(number));
    let mut revision = json!({
        "apiVersion": COMPOSITION_API_VERSION,
        "kind": REVISION_KIND,
        "metadata": {
            "name": name,
            "labels": labels,
            "ownerReferences": [controller_reference(composition)],
        },
        "spec": spec,
    });
    if !annotations.is_empty() {
        revision["metadata"]["annotations"] = Value::Object(annotations);
    }
    revision
}

/// The name of a new revision of `composition` hashed `hash` running `pins`:
/// upstream's, unless a revision of that name exists already (one of the
/// same Composition running other digests), then upstream's followed by
/// 5 hexadecimal digits of the digests' hash.
pub fn revision_name(composition: &Value, hash: &str, pins: &Pins, revisions: &[Value]) -> String {
    let upstream = upstream_revision_name(
        text(composition, "/metadata/name").unwrap_or_default(),
        hash,
    );
    let taken = revisions
        .iter()
        .any(|r| text(r, "/metadata/name") == Some(upstream.as_str()));
    if !taken {
        return upstream;
    }
    let digests = hex::encode(Sha256::digest(pins.annotation()));
    format!("{upstream}-{}", &digests[..5])
}

/// How a revision's recorded digests compare with the digests a state runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recorded {
    /// The same packages (or the state runs none it knows of): the revision is the state's.
    Same,
    /// Nothing recorded, as on a revision upstream made: the revision is
    /// the state's once the digests are recorded on it.
    Missing,
    /// Other packages, or a record that cannot be read.
    Different,
}

/// Built-ins are left out of the comparison: they change only with plait
/// itself, and an upgrade of plait makes no revision.
fn recorded(revision: &Value, pins: &Pins) -> Recorded {
    if pins.is_empty() {
        return Recorded::Same;
    }
    if revision
        .pointer(&plait_reconcile::pointer::annotation(DIGESTS_ANNOTATION))
        .is_none()
    {
        return Recorded::Missing;
    }
    match Pins::of_revision(revision) {
        Ok(record) if record.package_digests() == pins.package_digests() => Recorded::Same,
        _ => Recorded::Different,
    }
}

pub(super) fn controller_reference(composition: &Value) -> Value {
    json!({
        "apiVersion": COMPOSITION_API_VERSION,
        "kind": COMPOSITION_KIND,
        "name": composition.pointer("/metadata/name"),
        "uid": composition.pointer("/metadata/uid"),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The UID of the object's controller, if it has one.
fn controller_uid(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller") == Some(&Value::Bool(true)))?
        .get("uid")?
        .as_str()
}

fn revision_number(revision: &Value) -> i64 {
    revision
        .pointer("/spec/revision")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// The revision with the highest number among those `composition` controls.
pub fn latest<'a>(composition: &Value, revisions: &'a [Value]) -> Option<&'a Value> {
    let uid = text(composition, "/metadata/uid")?;
    revisions
        .iter()
        .filter(|r| controller_uid(r) == Some(uid))
        .filter(|r| revision_number(r) > 0)
        .max_by_key(|r| revision_number(r))
}

/// One change a Composition's revisions need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A revision of this Composition that lost its owner reference (as
    /// after a backup and restore) is taken back under its control.
    Adopt(String),
    /// A revision that matches the Composition but records no digests (as
    /// one upstream made) gets the digests its steps run, keeping its name
    /// and number.
    RecordDigests(String),
    /// An older revision matches the Composition again: it becomes the latest.
    Renumber { name: String, revision: i64 },
    /// No revision matches the Composition: revision `revision` is created.
    Create { name: String, revision: i64 },
}

/// What it takes for the latest revision to match `composition`, hashed
/// `hash` and running `pins`, given the revisions labelled with its name:
/// a revision matches when its hash label is the state's and it records
/// the same digests, or none.
pub fn plan(composition: &Value, hash: &str, pins: &Pins, revisions: &[Value]) -> Vec<Change> {
    let uid = text(composition, "/metadata/uid");
    let hash_label = upstream_revision_hash_label(hash);
    // A revision about to be adopted counts: it keeps its number.
    let latest_number = revisions
        .iter()
        .filter(|r| controller_uid(r).is_none_or(|owner| Some(owner) == uid))
        .map(revision_number)
        .max()
        .unwrap_or(0);
    let mut changes = Vec::new();
    let mut matching = None;
    for revision in revisions {
        let Some(name) = text(revision, "/metadata/name") else {
            continue;
        };
        match controller_uid(revision) {
            None => changes.push(Change::Adopt(name.to_string())),
            Some(owner) if Some(owner) != uid => continue,
            Some(_) => {}
        }
        if text(revision, "/metadata/labels/crossplane.io~1composition-hash")
            != Some(hash_label.as_str())
        {
            continue;
        }
        match recorded(revision, pins) {
            Recorded::Different => continue,
            Recorded::Same => matching = Some((name, revision_number(revision), false)),
            // One that records the digests already is preferred.
            Recorded::Missing if matching.is_none() => {
                matching = Some((name, revision_number(revision), true));
            }
            Recorded::Missing => {}
        }
    }
    let Some((name, number, unrecorded)) = matching else {
        changes.push(Change::Create {
            name: revision_name(composition, hash, pins, revisions),
            revision: latest_number + 1,
        });
        return changes;
    };
    if unrecorded {
        changes.push(Change::RecordDigests(name.to_string()));
    }
    if number != latest_number {
        changes.push(Change::Renumber {
            name: name.to_string(),
            revision: latest_number + 1,
        });
    }
    changes
}

/// The match labels of a `{matchLabels: {...}}` selector.
pub fn match_labels(selector: Option<&Value>) -> Option<BTreeMap<String, String>> {
    let labels = selector?.get("matchLabels")?.as_object()?;
    Some(
        labels
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect(),
    )
}

fn selects(labels: &BTreeMap<String, String>, revision: &Value) -> bool {
    labels.iter().all(|(k, v)| {
        revision.pointer("/metadata/labels").and_then(|l| l.get(k)) == Some(&json!(v))
    })
}

/// What the XRs of a Composition's kind say of the revisions they use,
/// gathered one XR at a time ([`Self::add`]), so the XRs need not all be
/// held at once: each XR's referenced revision, and the revision
/// selectors XRs of this Composition carry.
pub struct RevisionUses {
    composition: String,
    referenced: BTreeSet<String>,
    selectors: BTreeSet<BTreeMap<String, String>>,
}

impl RevisionUses {
    /// Nothing gathered yet, for the Composition named `composition`.
    pub fn new(composition: &str) -> RevisionUses {
        RevisionUses {
            composition: composition.to_string(),
            referenced: BTreeSet::new(),
            selectors: BTreeSet::new(),
        }
    }

    /// Gathers what `xr` uses.
    pub fn add(&mut self, xr: &Value) {
        // Which schema an XR follows is not known here, so both places are read.
        for machinery in ["/spec/crossplane", "/spec"] {
            if let Some(name) = text(xr, &format!("{machinery}/compositionRevisionRef/name")) {
                self.referenced.insert(name.to_string());
            }
            let composition_ref = text(xr, &format!("{machinery}/compositionRef/name"));
            if composition_ref.is_some_and(|c| c != self.composition) {
                continue;
            }
            if let Some(labels) =
                match_labels(xr.pointer(&format!("{machinery}/compositionRevisionSelector")))
            {
                self.selectors.insert(labels);
            }
        }
    }

    /// Names of `revisions` (sorted oldest first) that the XRs gathered use
    /// or would select on their next reconcile: the one each XR references,
    /// and the newest matching each revision selector an XR of this
    /// Composition (or the XRD's default) carries.
    pub fn in_use(
        self,
        revisions: &[&Value],
        default_selector: Option<&BTreeMap<String, String>>,
    ) -> BTreeSet<String> {
        let RevisionUses {
            referenced: mut used,
            selectors,
            ..
        } = self;
        for labels in selectors.iter().chain(default_selector) {
            if let Some(newest) = revisions.iter().rev().find(|r| selects(labels, r))
                && let Some(name) = text(newest, "/metadata/name")
            {
                used.insert(name.to_string());
            }
        }
        used
    }
}

/// The revisions to delete: beyond `limit` besides the latest, oldest
/// first, never the latest and never one in use. A limit of 0 keeps all.
pub fn collectable(
    composition: &Value,
    revisions: &[Value],
    limit: i64,
    used: &BTreeSet<String>,
) -> Vec<String> {
    let owned = owned_oldest_first(composition, revisions);
    let Ok(limit) = usize::try_from(limit) else {
        return Vec::new();
    };
    if limit == 0 || owned.len() <= limit + 1 {
        return Vec::new();
    }
    let older = &owned[..owned.len() - 1];
    older
        .iter()
        .filter_map(|r| text(r, "/metadata/name"))
        .filter(|name| !used.contains(*name))
        .take(older.len() - limit)
        .map(str::to_string)
        .collect()
}

pub(super) fn owned_oldest_first<'a>(
    composition: &Value,
    revisions: &'a [Value],
) -> Vec<&'a Value> {
    let uid = text(composition, "/metadata/uid");
    let mut owned: Vec<&Value> = revisions
        .iter()
        .filter(|r| uid.is_some() && controller_uid(r) == uid)
        .collect();
    owned.sort_by_key(|r| revision_number(r));
    owned
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stores::catalog::composition_of;

    fn composition(spec: Value) -> Value {
        json!({
            "apiVersion": COMPOSITION_API_VERSION, "kind": COMPOSITION_KIND,
            "metadata": {"name": "c", "uid": "cuid", "labels": {"channel": "dev"}},
            "spec": spec,
        })
    }

    fn hash_of(composition: &Value) -> String {
        revision_hash(composition).unwrap()
    }

    /// A Pipeline-mode spec running `functions` as `(step, function)`.
    fn pipeline(functions: &[(&str, &str)]) -> Value {
        let steps: Vec<Value> = functions
            .iter()
            .map(|(step, function)| json!({"step": step, "functionRef": {"name": function}}))
            .collect();
        json!({"mode": "Pipeline", "pipeline": steps})
    }

    /// Revision `number` of `composition` running `pins`, named as upstream names it.
    fn revision_of(composition: &Value, pins: &Pins, number: i64) -> Value {
        let hash = hash_of(composition);
        let name = upstream_revision_name("c", &hash);
        new_revision(composition, &hash, pins, &name, number)
    }

    /// A revision of `c` numbered `number`, made from `spec`, controlled by `owner`.
    fn revision(spec: Value, number: i64, owner: Option<&str>) -> Value {
        let mut r = revision_of(&composition(spec), &Pins::default(), number);
        match owner {
            Some(uid) => r["metadata"]["ownerReferences"][0]["uid"] = json!(uid),
            None => r["metadata"]["ownerReferences"] = json!([]),
        }
        r
    }

    fn name_of(revision: &Value) -> String {
        revision["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    #[test]
    fn a_revision_copies_the_composition_with_its_number_labels_and_owner() {
        let mut c = composition(json!({"mode": "Pipeline", "revisionHistoryLimit": 3}));
        let hash = hash_of(&c);
        assert_eq!(hash, upstream_composition_hash(&c).unwrap());
        let r = revision_of(&c, &Pins::default(), 4);
        assert_eq!(r["metadata"]["name"], format!("c-{}", &hash[..7]));
        assert_eq!(
            r["metadata"]["labels"],
            json!({"channel": "dev", LABEL_COMPOSITION_NAME: "c", LABEL_COMPOSITION_HASH: &hash[..63]})
        );
        assert_eq!(r["spec"], json!({"mode": "Pipeline", "revision": 4}));
        assert_eq!(r["metadata"]["ownerReferences"][0]["uid"], "cuid");
        assert_eq!(r["metadata"]["ownerReferences"][0]["controller"], true);
        assert!(r["metadata"].get("annotations").is_none());
        assert_eq!(composition_of(&r)["spec"], json!({"mode": "Pipeline"}));
        // Labels count towards the hash; key order does not.
        c["metadata"]["labels"]["channel"] = json!("prod");
        assert_ne!(hash_of(&c), hash);
        let reordered: Value = serde_json::from_str(
            r#"{"spec": {"revisionHistoryLimit": 3, "mode": "Pipeline"}, "metadata": {"labels": {"channel": "dev"}, "name": "c"}}"#,
        )
        .unwrap();
        assert_eq!(hash_of(&reordered), hash);
    }

    #[test]
    fn a_revision_carries_the_compositions_labels_over_its_own_and_all_its_annotations() {
        let digests = pins(&[("compose", at("fn-x", "sha256:1"))]);
        // (what, labels, annotations, pins, want labels beyond the two, want annotations)
        let cases = [
            (
                "labels and annotations are copied",
                json!({"team": "a"}),
                json!({"note": "x"}),
                Pins::default(),
                json!({"team": "a"}),
                json!({"note": "x"}),
            ),
            (
                "a Composition label of the same key wins, as upstream copies them last",
                json!({LABEL_COMPOSITION_NAME: "other"}),
                json!({}),
                Pins::default(),
                json!({LABEL_COMPOSITION_NAME: "other"}),
                Value::Null,
            ),
            (
                "the digests are added beside the Composition's annotations",
                json!({}),
                json!({"note": "x", DIGESTS_ANNOTATION: "stale"}),
                digests.clone(),
                json!({}),
                json!({"note": "x", DIGESTS_ANNOTATION: digests.annotation()}),
            ),
        ];
        for (what, labels, annotations, pins, want_labels, want_annotations) in cases {
            let mut c = composition(pipeline(&[("compose", "fn-x")]));
            c["metadata"]["labels"] = labels;
            c["metadata"]["annotations"] = annotations;
            let hash = hash_of(&c);
            let r = new_revision(&c, &hash, &pins, "c-rev", 1);
            let mut want =
                json!({LABEL_COMPOSITION_NAME: "c", LABEL_COMPOSITION_HASH: &hash[..63]});
            for (key, value) in want_labels.as_object().unwrap() {
                want[key] = value.clone();
            }
            assert_eq!(r["metadata"]["labels"], want, "{what}");
            assert_eq!(
                r["metadata"]
                    .get("annotations")
                    .cloned()
                    .unwrap_or_default(),
                want_annotations,
                "{what}"
            );
        }
    }

    #[test]
    fn pipeline_compositions_hash_as_upstream_and_resources_ones_by_their_whole_spec() {
        let resources = |name: &str| json!([{"name": name, "base": {"kind": "Bucket"}}]);
        // (what, spec, whether upstream's hash)
        let cases = [
            ("mode Pipeline", pipeline(&[("s", "fn-x")]), true),
            ("no mode and no resources", json!({"pipeline": []}), true),
            (
                "mode Resources",
                json!({"mode": "Resources", "resources": resources("a")}),
                false,
            ),
            (
                "no mode with resources",
                json!({"resources": resources("a")}),
                false,
            ),
        ];
        for (what, spec, upstream) in cases {
            let c = composition(spec);
            assert_eq!(
                hash_of(&c) == upstream_composition_hash(&c).unwrap(),
                upstream,
                "{what}"
            );
        }
        let one = composition(json!({"mode": "Resources", "resources": resources("a")}));
        let two = composition(json!({"mode": "Resources", "resources": resources("b")}));
        assert_eq!(
            upstream_composition_hash(&one).unwrap(),
            upstream_composition_hash(&two).unwrap(),
            "upstream's hash does not see spec.resources"
        );
        assert_ne!(hash_of(&one), hash_of(&two), "plait's does");
    }

    #[test]
    fn a_composition_upstream_cannot_read_is_a_hash_error_naming_the_field() {
        let mut c = composition(pipeline(&[("s", "fn-x")]));
        c["metadata"]["labels"]["channel"] = json!(1);
        let error = revision_hash(&c).unwrap_err();
        assert_eq!(error.field, "metadata.labels");
    }

    #[test]
    fn plan_creates_renumbers_or_adopts_as_upstream() {
        let one = pipeline(&[("s", "fn-1")]);
        let two = pipeline(&[("s", "fn-2")]);
        let c1_name = name_of(&revision(one.clone(), 1, Some("cuid")));
        let c2_name = name_of(&revision(two.clone(), 1, Some("cuid")));
        let cases = [
            (
                "first revision",
                one.clone(),
                vec![],
                vec![Change::Create {
                    name: c1_name.clone(),
                    revision: 1,
                }],
            ),
            (
                "current matches the latest",
                one.clone(),
                vec![revision(one.clone(), 1, Some("cuid"))],
                vec![],
            ),
            (
                "edited",
                two.clone(),
                vec![revision(one.clone(), 1, Some("cuid"))],
                vec![Change::Create {
                    name: c2_name.clone(),
                    revision: 2,
                }],
            ),
            (
                "back to an older state",
                one.clone(),
                vec![
                    revision(one.clone(), 1, Some("cuid")),
                    revision(two.clone(), 2, Some("cuid")),
                ],
                vec![Change::Renumber {
                    name: c1_name.clone(),
                    revision: 3,
                }],
            ),
            (
                "another Composition's revision of the same name is not counted",
                two.clone(),
                vec![revision(one.clone(), 5, Some("other"))],
                vec![Change::Create {
                    name: c2_name.clone(),
                    revision: 1,
                }],
            ),
            (
                "an orphaned revision is adopted with its number",
                one.clone(),
                vec![revision(one.clone(), 5, None)],
                vec![Change::Adopt(c1_name.clone())],
            ),
            (
                "an orphaned older revision is adopted and becomes the latest",
                one.clone(),
                vec![
                    revision(one.clone(), 1, None),
                    revision(two.clone(), 2, Some("cuid")),
                ],
                vec![
                    Change::Adopt(c1_name.clone()),
                    Change::Renumber {
                        name: c1_name.clone(),
                        revision: 3,
                    },
                ],
            ),
            (
                "an orphaned revision of another state counts towards the next number",
                two.clone(),
                vec![revision(one.clone(), 4, None)],
                vec![
                    Change::Adopt(c1_name.clone()),
                    Change::Create {
                        name: c2_name.clone(),
                        revision: 5,
                    },
                ],
            ),
        ];
        for (what, spec, revisions, want) in cases {
            let c = composition(spec);
            assert_eq!(
                plan(&c, &hash_of(&c), &Pins::default(), &revisions),
                want,
                "{what}"
            );
        }
    }

    /// The pin of `function` at package digest `digest`.
    fn at(function: &str, digest: &str) -> Pin {
        Pin {
            function: function.into(),
            digest: digest.into(),
            source: plait_functions::PinnedSource::Package {
                pinned: format!("r.io/{function}@{digest}"),
            },
        }
    }

    fn pins(entries: &[(&str, Pin)]) -> Pins {
        Pins(
            entries
                .iter()
                .map(|(step, pin)| (step.to_string(), pin.clone()))
                .collect(),
        )
    }

    /// `revision` controlled by the test's Composition.
    fn with_owner(mut revision: Value) -> Value {
        revision["metadata"]["ownerReferences"][0]["uid"] = json!("cuid");
        revision
    }

    /// The revision upstream Crossplane makes of `composition`: its name,
    /// labels and annotations, its number, no digests.
    fn upstream_made(composition: &Value, number: i64) -> Value {
        with_owner(revision_of(composition, &Pins::default(), number))
    }

    #[test]
    fn upstream_revisions_are_adopted_and_new_states_named_as_upstream_names_them() {
        let c = composition(pipeline(&[("compose", "fn-x")]));
        let edited = composition(pipeline(&[("compose", "fn-x"), ("more", "fn-x")]));
        let one = pins(&[("compose", at("fn-x", "sha256:1"))]);
        let two = pins(&[("compose", at("fn-x", "sha256:2"))]);
        let upstream_name = upstream_revision_name("c", &hash_of(&c));
        let edited_name = upstream_revision_name("c", &hash_of(&edited));
        let recorded_one = with_owner(revision_of(&c, &one, 3));
        let older_upstream = upstream_made(&edited, 2);
        let one_suffix = &hex::encode(Sha256::digest(one.annotation()))[..5];
        let two_suffix = &hex::encode(Sha256::digest(two.annotation()))[..5];
        let cases = [
            (
                "an upstream revision that is the latest only gets the digests recorded",
                &c,
                one.clone(),
                vec![upstream_made(&c, 7)],
                vec![Change::RecordDigests(upstream_name.clone())],
            ),
            (
                "an older upstream revision gets the digests and becomes the latest",
                &edited,
                one.clone(),
                vec![older_upstream.clone(), upstream_made(&c, 3)],
                vec![
                    Change::RecordDigests(edited_name.clone()),
                    Change::Renumber {
                        name: edited_name.clone(),
                        revision: 4,
                    },
                ],
            ),
            (
                "an upstream revision is the state's as it is while no digest is known",
                &c,
                Pins::default(),
                vec![upstream_made(&c, 1)],
                vec![],
            ),
            (
                "an edited Composition gets a revision named as upstream names it",
                &edited,
                one.clone(),
                vec![recorded_one.clone()],
                vec![Change::Create {
                    name: edited_name.clone(),
                    revision: 4,
                }],
            ),
            (
                "new digests alone get upstream's name with the digests' hash",
                &c,
                two.clone(),
                vec![recorded_one.clone()],
                vec![Change::Create {
                    name: format!("{upstream_name}-{two_suffix}"),
                    revision: 4,
                }],
            ),
            (
                "the digests recorded already match",
                &c,
                one.clone(),
                vec![recorded_one.clone()],
                vec![],
            ),
            (
                "back to digests a suffixed revision records renumbers it",
                &c,
                two.clone(),
                vec![
                    with_owner(new_revision(
                        &c,
                        &hash_of(&c),
                        &two,
                        &format!("{upstream_name}-{two_suffix}"),
                        1,
                    )),
                    with_owner(revision_of(&c, &one, 2)),
                ],
                vec![Change::Renumber {
                    name: format!("{upstream_name}-{two_suffix}"),
                    revision: 3,
                }],
            ),
        ];
        for (what, composition, pins, revisions, want) in cases {
            let got = plan(composition, &hash_of(composition), &pins, &revisions);
            assert_eq!(got, want, "{what}");
        }
        assert_ne!(one_suffix, two_suffix);
    }

    #[test]
    fn a_composition_carrying_a_hash_label_of_its_own_finds_the_revision_made_for_it() {
        let mut c = composition(pipeline(&[("compose", "fn-x")]));
        c["metadata"]["labels"] = json!({LABEL_COMPOSITION_HASH: "stale", "team": "a"});
        let none = pins(&[]);
        let hash = hash_of(&c);
        let r = revision_of(&c, &none, 1);
        assert_eq!(r["metadata"]["labels"]["team"], json!("a"));
        assert_eq!(
            r["metadata"]["labels"][LABEL_COMPOSITION_HASH],
            json!(&hash[..63])
        );
        assert_eq!(plan(&c, &hash, &none, &[with_owner(r)]), vec![]);
    }

    #[test]
    fn package_digests_are_recorded_on_the_revision_and_leave_its_hash_upstreams() {
        let c = composition(pipeline(&[
            ("compose", "fn-x"),
            ("ready", "function-auto-ready"),
        ]));
        let builtin = plait_functions::current_pin("function-auto-ready", None).unwrap();
        let one = pins(&[
            ("compose", at("fn-x", "sha256:1")),
            ("ready", builtin.clone()),
        ]);
        let hash = hash_of(&c);
        let r = revision_of(&c, &one, 1);
        assert_eq!(r["metadata"]["name"], upstream_revision_name("c", &hash));
        assert_eq!(
            r["metadata"]["labels"][LABEL_COMPOSITION_HASH],
            json!(&hash[..63])
        );
        assert_eq!(Pins::of_revision(&r).unwrap(), one);
        assert_eq!(
            r["spec"],
            json!({"mode": "Pipeline", "revision": 1, "pipeline": c["spec"]["pipeline"]}),
            "the spec stays upstream's"
        );
        let mut other_builtin = builtin;
        other_builtin.digest = "sha256:another-plait".into();
        let upgraded = pins(&[
            ("compose", at("fn-x", "sha256:1")),
            ("ready", other_builtin),
        ]);
        assert_eq!(
            plan(&c, &hash, &upgraded, &[with_owner(r)]),
            vec![],
            "a built-in's digest changes with plait alone and makes no revision"
        );
    }

    #[test]
    fn a_step_whose_function_is_not_known_now_keeps_what_the_latest_revision_recorded() {
        let c = composition(pipeline(&[("compose", "fn-x"), ("extra", "fn-y")]));
        let latest = pins(&[
            ("compose", at("fn-x", "sha256:1")),
            ("extra", at("fn-z", "sha256:9")),
        ]);
        let now = |digest: Option<&'static str>| {
            move |function: &str| match (function, digest) {
                ("fn-x", Some(d)) => Some(at("fn-x", d)),
                _ => None,
            }
        };
        assert_eq!(
            desired_pins(&c, &latest, now(Some("sha256:2"))),
            pins(&[("compose", at("fn-x", "sha256:2"))]),
            "the current digest wins; a record of another function is dropped"
        );
        assert_eq!(
            desired_pins(&c, &latest, now(None)),
            pins(&[("compose", at("fn-x", "sha256:1"))]),
            "an unhealthy or missing Function keeps the recorded digest"
        );
        assert_eq!(
            desired_pins(&c, &Pins::default(), now(None)),
            Pins::default()
        );
        let resources = composition(json!({"mode": "Resources", "resources": []}));
        assert_eq!(
            desired_pins(&resources, &latest, now(Some("sha256:2"))),
            Pins::default()
        );
        assert!(runs(&c, "fn-y") && !runs(&c, "fn-z"));
    }

    #[test]
    fn old_revisions_beyond_the_limit_are_collected_unless_in_use() {
        let revisions: Vec<Value> = (1..=4)
            .map(|n| revision(pipeline(&[("s", &format!("fn-{n}"))]), n, Some("cuid")))
            .collect();
        let name = |n: usize| {
            revisions[n - 1]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_string()
        };
        let used = |ns: &[usize]| ns.iter().map(|n| name(*n)).collect::<BTreeSet<_>>();
        let c = composition(json!({}));
        // (limit, in use, want deleted)
        let cases: &[(i64, &[usize], &[usize])] = &[
            (1, &[], &[1, 2]),
            (2, &[], &[1]),
            (3, &[], &[]),
            (0, &[], &[]),
            (1, &[1], &[2, 3]),
            (1, &[1, 2], &[3]),
            (1, &[4], &[1, 2]),
        ];
        for (limit, in_use, want) in cases {
            let got = collectable(&c, &revisions, *limit, &used(in_use));
            let want: Vec<String> = want.iter().map(|n| name(*n)).collect();
            assert_eq!(got, want, "limit {limit}, in use {in_use:?}");
        }
    }

    #[test]
    fn revisions_in_use_are_referenced_or_newest_selected() {
        let mut revisions: Vec<Value> = (1..=3)
            .map(|n| revision(pipeline(&[("s", &format!("fn-{n}"))]), n, Some("cuid")))
            .collect();
        revisions[0]["metadata"]["labels"]["channel"] = json!("stable");
        let name = |n: usize| {
            revisions[n - 1]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_string()
        };
        let refs: Vec<&Value> = revisions.iter().collect();
        let stable = BTreeMap::from([("channel".to_string(), "stable".to_string())]);
        let cases = [
            (
                "a v2 XR's reference",
                vec![
                    json!({"spec": {"crossplane": {"compositionRevisionRef": {"name": name(2)}}}}),
                ],
                None,
                vec![name(2)],
            ),
            (
                "a v1 XR's reference",
                vec![json!({"spec": {"compositionRevisionRef": {"name": name(1)}}})],
                None,
                vec![name(1)],
            ),
            (
                "the newest revision an XR's selector matches",
                vec![
                    json!({"spec": {"crossplane": {"compositionRef": {"name": "c"}, "compositionRevisionSelector": {"matchLabels": {"channel": "dev"}}}}}),
                ],
                None,
                vec![name(3)],
            ),
            (
                "a selector of an XR of another Composition",
                vec![
                    json!({"spec": {"crossplane": {"compositionRef": {"name": "x"}, "compositionRevisionSelector": {"matchLabels": {"channel": "stable"}}}}}),
                ],
                None,
                vec![],
            ),
            (
                "the XRD's default selector",
                vec![],
                Some(&stable),
                vec![name(1)],
            ),
            (
                "what each of several XRs uses",
                vec![
                    json!({"spec": {"crossplane": {"compositionRevisionRef": {"name": name(2)}}}}),
                    json!({"spec": {"crossplane": {"compositionRef": {"name": "c"}, "compositionRevisionSelector": {"matchLabels": {"channel": "stable"}}}}}),
                    json!({"spec": {"crossplane": {"compositionRef": {"name": "c"}, "compositionRevisionSelector": {"matchLabels": {"channel": "stable"}}}}}),
                ],
                None,
                vec![name(1), name(2)],
            ),
        ];
        for (what, xrs, default, want) in cases {
            let mut uses = RevisionUses::new("c");
            for xr in &xrs {
                uses.add(xr);
            }
            let got = uses.in_use(&refs, default);
            assert_eq!(got, want.into_iter().collect::<BTreeSet<_>>(), "{what}");
        }
    }
}
