//! `plait trace KIND[/NAME]`: an XR's or claim's tree as the cluster has it
//! now — a claim, its XR, the XR's composed resources, nested XRs' composed
//! resources in turn — with each object's Synced and Ready conditions.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use kube::api::{Api, DynamicObject, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::{ApiCapabilities, ApiResource, Discovery, Scope};
use kube::{Client, Config};
use serde::Serialize;
use serde_json::{Value, json};

use crate::files;

/// The annotation naming a composed resource within its Composition.
const ANNOTATION_RESOURCE_NAME: &str = "crossplane.io/composition-resource-name";
/// How much of a condition message the default output keeps.
const MESSAGE_CHARS: usize = 64;
/// How deep nested XRs are followed; a deeper tree is cut there.
const MAX_DEPTH: usize = 16;

#[derive(clap::Args)]
pub struct TraceArgs {
    /// What to trace: KIND/NAME, or KIND and NAME as two arguments, or KIND
    /// alone for every object of the kind. KIND is a kind, a plural or a
    /// singular name, optionally with `.group` or `.version.group`.
    pub resource: String,
    /// The object's name, when not given as KIND/NAME.
    pub name: Option<String>,
    /// The namespace of a namespaced object (a claim, a v2 XR).
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    /// The kubeconfig context to use.
    #[arg(short = 'c', long)]
    pub context: Option<String>,
    /// The kubeconfig to use; otherwise $KUBECONFIG, ~/.kube/config or the in-cluster config.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Output format: default, wide (adds RESOURCE, the composition
    /// resource name, and full messages), json, yaml or dot.
    #[arg(short = 'o', long = "output", default_value = "default")]
    pub output: TraceFormat,
    /// Show each XR's and claim's connection Secret as a child.
    #[arg(short = 's', long = "show-connection-secrets")]
    pub show_connection_secrets: bool,
    /// Keep watching, printing the tree again whenever it changes.
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// Show the last pipeline run of each XR in the tree, per step: the
    /// function, its module's digest, calls, cache hits, duration, results.
    /// Read from the controller's probe address (--controller-address).
    #[arg(long, requires = "controller_address")]
    pub steps: bool,
    /// The probe address (host:port) of the controller replica that
    /// reconciles the XRs, e.g. 127.0.0.1:8080 through `kubectl port-forward`.
    #[arg(long = "controller-address")]
    pub controller_address: Option<String>,
    /// How often --watch reads the tree again.
    #[arg(long = "watch-interval", default_value = "1s", value_parser = crate::parse_duration)]
    pub watch_interval: Duration,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    Default,
    Wide,
    Json,
    Yaml,
    Dot,
}

/// One object of the tree and what it is made of.
#[derive(Debug, Clone, Serialize)]
pub struct Node {
    pub object: Value,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Node>,
    /// Why the object could not be read, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The XR's last pipeline run, with --steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<Value>,
}

/// Every kind the API server serves, by (apiVersion, kind).
struct Kinds {
    by_gvk: HashMap<(String, String), (ApiResource, ApiCapabilities)>,
    /// The preferred version's resources, for resolving what the user typed.
    preferred: Vec<(ApiResource, ApiCapabilities)>,
}

impl Kinds {
    async fn discover(client: &Client) -> Result<Self> {
        // Aggregated discovery: two requests, whatever the number of groups;
        // a server without it is asked group by group.
        let discovery = match Discovery::new(client.clone()).run_aggregated().await {
            Ok(discovery) => discovery,
            Err(error) => {
                tracing::debug!(%error, "no aggregated discovery; asking group by group");
                Discovery::new(client.clone())
                    .run()
                    .await
                    .context("cannot discover the API server's kinds")?
            }
        };
        let mut by_gvk = HashMap::new();
        let mut preferred = Vec::new();
        for group in discovery.groups() {
            for version in group.versions() {
                for (resource, caps) in group.versioned_resources(version) {
                    by_gvk.insert(
                        (resource.api_version.clone(), resource.kind.clone()),
                        (resource, caps),
                    );
                }
            }
            preferred.extend(group.recommended_resources());
        }
        Ok(Kinds { by_gvk, preferred })
    }

    /// The kind `typed` names: `xnetwork`, `XNetwork`, `xnetworks`,
    /// `xnetworks.example.org`, `xnetworks.v1alpha1.example.org`.
    fn resolve(&self, typed: &str) -> Result<(ApiResource, ApiCapabilities)> {
        let (name, qualifier) = match typed.split_once('.') {
            Some((n, q)) => (n.to_lowercase(), Some(q)),
            None => (typed.to_lowercase(), None),
        };
        let mut candidates: Vec<_> = self
            .by_gvk
            .values()
            .filter(|(r, _)| {
                let named = r.kind.to_lowercase() == name || r.plural == name;
                let qualified = match qualifier {
                    None => true,
                    Some(q) => r.group == q || format!("{}.{}", r.version, r.group) == q,
                };
                named && qualified
            })
            .collect();
        let versioned = qualifier.is_some_and(|q| {
            candidates
                .iter()
                .any(|(r, _)| q.starts_with(&format!("{}.", r.version)))
        });
        if !versioned {
            // Of several versions of one kind, the preferred one.
            candidates.retain(|(r, _)| {
                self.preferred
                    .iter()
                    .any(|(p, _)| p.api_version == r.api_version && p.kind == r.kind)
            });
        }
        candidates.sort_by(|a, b| a.0.api_version.cmp(&b.0.api_version));
        match candidates.as_slice() {
            [] => bail!("the server has no kind {typed:?}"),
            [one] => Ok((*one).clone()),
            many => bail!(
                "{typed:?} names more than one kind ({}); qualify it with its group, e.g. {}.{}",
                many.iter()
                    .map(|(r, _)| format!("{}.{}", r.plural, r.group))
                    .collect::<Vec<_>>()
                    .join(", "),
                many[0].0.plural,
                many[0].0.group
            ),
        }
    }

    fn get(&self, api_version: &str, kind: &str) -> Option<&(ApiResource, ApiCapabilities)> {
        self.by_gvk
            .get(&(api_version.to_string(), kind.to_string()))
    }
}

async fn client(args: &TraceArgs) -> Result<Client> {
    let options = KubeConfigOptions {
        context: args.context.clone(),
        ..KubeConfigOptions::default()
    };
    let config = match (&args.kubeconfig, &args.context) {
        (Some(path), _) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .with_context(|| format!("invalid kubeconfig {}", path.display()))?
        }
        (None, Some(context)) => Config::from_kubeconfig(&options)
            .await
            .with_context(|| format!("cannot use kubeconfig context {context:?}"))?,
        (None, None) => Config::infer()
            .await
            .context("no kubeconfig: pass --kubeconfig, set KUBECONFIG, or run in a cluster")?,
    };
    Client::try_from(config).context("cannot create a Kubernetes client")
}

pub fn run(args: &TraceArgs) -> Result<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(trace(args))
}

async fn trace(args: &TraceArgs) -> Result<String> {
    let (kind, name) = match (args.resource.split_once('/'), &args.name) {
        (Some(_), Some(_)) => bail!("give the name either as KIND/NAME or as a second argument"),
        (Some((kind, name)), None) => (kind.to_string(), Some(name.to_string())),
        (None, name) => (args.resource.clone(), name.clone()),
    };
    if name.as_deref() == Some("") {
        bail!("{:?}: the name after / is empty", args.resource);
    }
    let client = client(args).await?;
    let kinds = Kinds::discover(&client).await?;
    let (resource, caps) = kinds.resolve(&kind)?;
    let tracer = Tracer {
        client: &client,
        kinds: &kinds,
        show_secrets: args.show_connection_secrets,
        controller: args
            .steps
            .then(|| args.controller_address.clone())
            .flatten(),
    };
    let namespace = (caps.scope == Scope::Namespaced).then_some(args.namespace.as_str());
    let mut last = String::new();
    loop {
        let roots = tracer.roots(&resource, namespace, name.as_deref()).await?;
        let text = print(&roots, args.output)?;
        if !args.watch {
            return Ok(text);
        }
        if text != last {
            let mut stdout = std::io::stdout();
            if !last.is_empty() {
                let _ = writeln!(stdout);
            }
            let _ = write!(stdout, "{text}");
            let _ = stdout.flush();
            last = text;
        }
        tokio::time::sleep(args.watch_interval).await;
    }
}

struct Tracer<'a> {
    client: &'a Client,
    kinds: &'a Kinds,
    show_secrets: bool,
    /// The controller's probe address, to read pipeline runs from.
    controller: Option<String>,
}

impl Tracer<'_> {
    async fn roots(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Result<Vec<Node>> {
        let api: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, resource),
            None => Api::all_with(self.client.clone(), resource),
        };
        let objects = match name {
            Some(name) => vec![api.get(name).await.with_context(|| {
                format!(
                    "cannot get {}/{name}{}",
                    resource.kind,
                    namespace
                        .map(|n| format!(" in namespace {n}"))
                        .unwrap_or_default()
                )
            })?],
            None => {
                let mut items = api
                    .list(&ListParams::default())
                    .await
                    .with_context(|| format!("cannot list {}", resource.plural))?
                    .items;
                items.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
                items
            }
        };
        let mut roots = Vec::new();
        for object in objects {
            let value = to_value(object, resource)?;
            roots.push(self.node(value, 0).await);
        }
        Ok(roots)
    }

    /// The node of an object that was read, with its children.
    async fn node(&self, object: Value, depth: usize) -> Node {
        let mut children = Vec::new();
        if depth < MAX_DEPTH {
            for reference in references(&object) {
                children.push(Box::pin(self.child(&reference, depth + 1)).await);
            }
            if self.show_secrets
                && let Some(secret) = connection_secret(&object)
            {
                children.push(Box::pin(self.child(&secret, depth + 1)).await);
            }
        }
        let run = match &self.controller {
            // Only XRs have a Composition, and a pipeline run.
            Some(address)
                if object.pointer("/spec/compositionRef").is_some()
                    || object.pointer("/spec/crossplane/compositionRef").is_some() =>
            {
                pipeline_run(address, &object)
            }
            _ => None,
        };
        Node {
            object,
            children,
            error: None,
            run,
        }
    }

    /// The node a reference points to, or what went wrong reading it.
    async fn child(&self, reference: &Reference, depth: usize) -> Node {
        let stub = json!({
            "apiVersion": reference.api_version,
            "kind": reference.kind,
            "metadata": {"name": reference.name},
        });
        let failed = |error: String| {
            let mut object = stub.clone();
            if let Some(ns) = &reference.namespace {
                object["metadata"]["namespace"] = json!(ns);
            }
            Node {
                object,
                children: Vec::new(),
                error: Some(error),
                run: None,
            }
        };
        let Some((resource, caps)) = self.kinds.get(&reference.api_version, &reference.kind) else {
            return failed(format!(
                "the server has no kind {} in {}",
                reference.kind, reference.api_version
            ));
        };
        let api: Api<DynamicObject> = match (&caps.scope, &reference.namespace) {
            (Scope::Namespaced, Some(ns)) => {
                Api::namespaced_with(self.client.clone(), ns, resource)
            }
            (Scope::Namespaced, None) => {
                return failed("a namespaced object referenced without a namespace".into());
            }
            (Scope::Cluster, _) => Api::all_with(self.client.clone(), resource),
        };
        match api.get_opt(&reference.name).await {
            Ok(Some(object)) => match to_value(object, resource) {
                Ok(value) => self.node(value, depth).await,
                Err(e) => failed(format!("{e:#}")),
            },
            Ok(None) => failed("resource not found".into()),
            Err(e) => failed(e.to_string()),
        }
    }
}

fn to_value(object: DynamicObject, resource: &ApiResource) -> Result<Value> {
    let mut value = serde_json::to_value(&object).context("cannot read the object as JSON")?;
    // A get leaves the type out of the object it returns.
    value["apiVersion"] = json!(resource.api_version);
    value["kind"] = json!(resource.kind);
    Ok(value)
}

/// A reference to an object, as a claim, an XR or a connection Secret ref
/// holds it; the namespace where the object is namespaced.
#[derive(Debug, Clone, PartialEq)]
struct Reference {
    api_version: String,
    kind: String,
    name: String,
    namespace: Option<String>,
}

fn text<'v>(v: &'v Value, pointer: &str) -> Option<&'v str> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// What an object is made of: a claim's XR (`spec.resourceRef`), an XR's
/// composed resources (`spec.resourceRefs`, or `spec.crossplane.resourceRefs`
/// for a v2 XR). A reference without a namespace is taken to be in the
/// object's own namespace.
fn references(object: &Value) -> Vec<Reference> {
    let own_namespace = text(object, "/metadata/namespace").map(str::to_string);
    let reference = |r: &Value, default_namespace: Option<String>| {
        Some(Reference {
            api_version: text(r, "/apiVersion")?.to_string(),
            kind: text(r, "/kind")?.to_string(),
            name: text(r, "/name")?.to_string(),
            namespace: text(r, "/namespace")
                .map(str::to_string)
                .or(default_namespace),
        })
    };
    let mut out = Vec::new();
    // A claim's XR is cluster scoped (v1) or in its namespace.
    if let Some(r) = object.pointer("/spec/resourceRef") {
        out.extend(reference(r, own_namespace.clone()));
    }
    for pointer in ["/spec/resourceRefs", "/spec/crossplane/resourceRefs"] {
        for r in object
            .pointer(pointer)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.extend(reference(r, own_namespace.clone()));
        }
    }
    out
}

/// The Secret an XR or claim writes its connection details to.
fn connection_secret(object: &Value) -> Option<Reference> {
    let name = text(object, "/spec/writeConnectionSecretToRef/name")?;
    let namespace = text(object, "/spec/writeConnectionSecretToRef/namespace")
        .or_else(|| text(object, "/metadata/namespace"))?;
    Some(Reference {
        api_version: "v1".into(),
        kind: "Secret".into(),
        name: name.to_string(),
        namespace: Some(namespace.to_string()),
    })
}

/// A condition's status, reason and message.
fn condition<'v>(object: &'v Value, kind: &str) -> (&'v str, &'v str, &'v str) {
    let found = object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind));
    let field = |k: &str| {
        found
            .and_then(|c| c.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    (field("status"), field("reason"), field("message"))
}

/// SYNCED, READY and STATUS of a node, as upstream's trace shows them: the
/// Ready reason when both conditions hold, else the failing condition's
/// reason and message (Synced first), cut to its last 64 characters
/// unless `wide`.
fn status_columns(node: &Node, wide: bool) -> (String, String, String) {
    let (synced, synced_reason, synced_message) = condition(&node.object, "Synced");
    let (ready, ready_reason, ready_message) = condition(&node.object, "Ready");
    let (mut status, message) = if let Some(error) = &node.error {
        ("Error".to_string(), error.as_str())
    } else if ready == "True" && synced == "True" {
        (ready_reason.to_string(), "")
    } else if synced == "False" {
        (synced_reason.to_string(), synced_message)
    } else {
        (ready_reason.to_string(), ready_message)
    };
    if !message.is_empty() {
        let chars: Vec<char> = message.chars().collect();
        let message = if !wide && chars.len() > MESSAGE_CHARS {
            format!(
                "...{}",
                chars[chars.len() - MESSAGE_CHARS..]
                    .iter()
                    .collect::<String>()
            )
        } else {
            message.to_string()
        };
        status = format!("{status}: {message}");
    }
    let dash = |s: &str| {
        if s.is_empty() {
            "-".to_string()
        } else {
            s.to_string()
        }
    };
    (dash(synced), dash(ready), status)
}

fn print(roots: &[Node], format: TraceFormat) -> Result<String> {
    Ok(match format {
        TraceFormat::Default => table(roots, false) + &steps(roots),
        TraceFormat::Wide => table(roots, true) + &steps(roots),
        TraceFormat::Json => {
            let mut text = match roots {
                [one] => serde_json::to_string_pretty(one),
                many => serde_json::to_string_pretty(many),
            }
            .context("cannot write JSON")?;
            text.push('\n');
            text
        }
        TraceFormat::Yaml => match roots {
            [one] => files::serialize_to_yaml(one),
            many => files::serialize_to_yaml(&many),
        }?,
        TraceFormat::Dot => dot(roots),
    })
}

/// The tree as a table, each row's name indented under its parent.
fn table(roots: &[Node], wide: bool) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header = vec!["NAME".to_string()];
    if wide {
        header.push("RESOURCE".into());
    }
    header.extend(["SYNCED".into(), "READY".into(), "STATUS".into()]);
    rows.push(header);
    fn walk(node: &Node, prefix: &str, branch: &str, wide: bool, rows: &mut Vec<Vec<String>>) {
        let kind = text(&node.object, "/kind").unwrap_or_default();
        let name = text(&node.object, "/metadata/name").unwrap_or_default();
        let mut label = format!("{prefix}{branch}{kind}/{name}");
        if let Some(ns) = text(&node.object, "/metadata/namespace") {
            let _ = write!(label, " ({ns})");
        }
        let (synced, ready, status) = status_columns(node, wide);
        let mut row = vec![label];
        if wide {
            let resource = text(
                &node.object,
                &plait_reconcile::pointer::annotation(ANNOTATION_RESOURCE_NAME),
            );
            row.push(resource.unwrap_or_default().to_string());
        }
        row.extend([synced, ready, status]);
        rows.push(row);
        let child_prefix = match branch {
            "" => prefix.to_string(),
            "└─ " => format!("{prefix}   "),
            _ => format!("{prefix}│  "),
        };
        for (i, child) in node.children.iter().enumerate() {
            let branch = if i + 1 == node.children.len() {
                "└─ "
            } else {
                "├─ "
            };
            walk(child, &child_prefix, branch, wide, rows);
        }
    }
    for root in roots {
        walk(root, "", "", wide, &mut rows);
    }
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if c + 1 < columns {
                let pad = widths[c] - cell.chars().count() + 3;
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The controller's record of an XR's last pipeline run, if it has one.
fn pipeline_run(address: &str, object: &Value) -> Option<Value> {
    use std::io::{Read, Write};
    let key = format!(
        "{}/{}/{}/{}",
        text(object, "/apiVersion")?,
        text(object, "/kind")?,
        text(object, "/metadata/namespace").unwrap_or("_"),
        text(object, "/metadata/name")?,
    );
    let mut stream = std::net::TcpStream::connect(address).ok()?;
    let timeout = Some(std::time::Duration::from_secs(5));
    stream.set_read_timeout(timeout).ok()?;
    stream.set_write_timeout(timeout).ok()?;
    write!(
        stream,
        "GET /pipeline-runs/{key} HTTP/1.1\r\nHost: plait\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.take(16 << 20).read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    if !head.starts_with("HTTP/1.1 200") {
        return None;
    }
    serde_json::from_str(body).ok()
}

/// Each XR's last pipeline run, a table per XR: what --steps adds.
fn steps(roots: &[Node]) -> String {
    fn walk<'n>(node: &'n Node, out: &mut Vec<&'n Node>) {
        if node.run.is_some() {
            out.push(node);
        }
        for child in &node.children {
            walk(child, out);
        }
    }
    let mut with_runs = Vec::new();
    for root in roots {
        walk(root, &mut with_runs);
    }
    let mut out = String::new();
    for node in with_runs {
        let Some(run) = &node.run else { continue };
        let _ = writeln!(
            out,
            "\nLast pipeline run of {}/{}{}:",
            text(&node.object, "/kind").unwrap_or_default(),
            text(&node.object, "/metadata/name").unwrap_or_default(),
            run.get("error")
                .and_then(Value::as_str)
                .map(|e| format!(" (failed: {e})"))
                .unwrap_or_default()
        );
        let mut rows = vec![vec![
            "STEP".to_string(),
            "FUNCTION".into(),
            "DIGEST".into(),
            "CALLS".into(),
            "CACHED".into(),
            "DURATION".into(),
            "RESULTS".into(),
        ]];
        for step in run
            .get("steps")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let field = |k: &str| {
                step.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("-")
                    .to_string()
            };
            let number = |k: &str| step.get(k).and_then(Value::as_u64).unwrap_or(0).to_string();
            let digest = field("digest");
            let short = digest
                .strip_prefix("sha256:")
                .map(|d| format!("sha256:{}", &d[..d.len().min(12)]))
                .unwrap_or(digest);
            let duration = step
                .get("durationMs")
                .and_then(Value::as_f64)
                .map_or_else(|| "-".to_string(), |ms| format!("{ms:.1}ms"));
            let results: Vec<String> = step
                .get("results")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|r| {
                    format!(
                        "{}: {}",
                        r.get("severity").and_then(Value::as_str).unwrap_or("?"),
                        r.get("message").and_then(Value::as_str).unwrap_or_default()
                    )
                })
                .chain(
                    step.get("failure")
                        .and_then(Value::as_str)
                        .map(|f| format!("failed: {f}")),
                )
                .collect();
            rows.push(vec![
                field("step"),
                field("function"),
                short,
                number("calls"),
                number("cached"),
                duration,
                if results.is_empty() {
                    "-".into()
                } else {
                    results.join("; ")
                },
            ]);
        }
        out.push_str(&columns(&rows));
    }
    out
}

/// Rows as left-aligned columns three spaces apart.
fn columns(rows: &[Vec<String>]) -> String {
    let count = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..count)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if c + 1 < count {
                line.push_str(&" ".repeat(widths[c] - cell.chars().count() + 3));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The tree as a Graphviz graph, a node per object labelled as upstream's.
fn dot(roots: &[Node]) -> String {
    let mut out = String::from("graph {\n");
    let mut id = 0;
    let mut queue: std::collections::VecDeque<(&Node, Option<usize>)> =
        roots.iter().map(|r| (r, None)).collect();
    while let Some((node, parent)) = queue.pop_front() {
        id += 1;
        let this = id;
        let mut label = format!(
            "Name: {}/{}\nApiVersion: {}\n",
            text(&node.object, "/kind").unwrap_or_default(),
            text(&node.object, "/metadata/name").unwrap_or_default(),
            text(&node.object, "/apiVersion").unwrap_or_default(),
        );
        if let Some(ns) = text(&node.object, "/metadata/namespace") {
            let _ = writeln!(label, "Namespace: {ns}");
        }
        let (ready, _, _) = condition(&node.object, "Ready");
        let (synced, _, _) = condition(&node.object, "Synced");
        let _ = write!(label, "Ready: {ready}\nSynced: {synced}\n");
        if let Some(error) = &node.error {
            let _ = writeln!(label, "Error: {error}");
        }
        let label = label
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n");
        let _ = writeln!(out, "\tn{this}[label=\"{label}\",penwidth=\"2\"];");
        if let Some(parent) = parent {
            let _ = writeln!(out, "\tn{parent}--n{this};");
        }
        for child in &node.children {
            queue.push_back((child, Some(this)));
        }
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(object: Value, children: Vec<Node>) -> Node {
        Node {
            object,
            children,
            error: None,
            run: None,
        }
    }

    fn conditions(synced: &str, ready: &str, reason: &str, message: &str) -> Value {
        json!({"conditions": [
            {"type": "Synced", "status": synced, "reason": "ReconcileSuccess"},
            {"type": "Ready", "status": ready, "reason": reason, "message": message},
        ]})
    }

    #[test]
    fn the_table_indents_children_and_shows_the_failing_condition() {
        let long = "x".repeat(70);
        let tree = node(
            json!({"apiVersion": "example.org/v1", "kind": "XNet", "metadata": {"name": "net"},
                   "status": conditions("True", "False", "Creating", "")}),
            vec![
                node(
                    json!({"apiVersion": "example.org/v1", "kind": "Vpc", "metadata": {"name": "vpc", "annotations": {ANNOTATION_RESOURCE_NAME: "vpc"}},
                           "status": conditions("True", "True", "Available", "")}),
                    vec![],
                ),
                Node {
                    object: json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}}),
                    children: vec![],
                    error: Some("resource not found".into()),
                    run: None,
                },
                node(
                    json!({"apiVersion": "example.org/v1", "kind": "Subnet", "metadata": {"name": "sub"},
                           "status": conditions("True", "False", "Unavailable", &long)}),
                    vec![],
                ),
            ],
        );
        let want = format!(
            "NAME               SYNCED   READY   STATUS\n\
             XNet/net           True     False   Creating\n\
             ├─ Vpc/vpc         True     True    Available\n\
             ├─ Secret/s (ns)   -        -       Error: resource not found\n\
             └─ Subnet/sub      True     False   Unavailable: ...{}\n",
            "x".repeat(64)
        );
        assert_eq!(table(std::slice::from_ref(&tree), false), want);
        let wide = table(std::slice::from_ref(&tree), true);
        assert!(
            wide.starts_with("NAME               RESOURCE   SYNCED   READY   STATUS\n"),
            "{wide}"
        );
        assert!(wide.contains(&long), "wide keeps the whole message: {wide}");
    }

    #[test]
    fn references_follow_claims_xrs_and_v2_xrs() {
        let claim = json!({"metadata": {"namespace": "team"}, "spec": {"resourceRef": {"apiVersion": "example.org/v1", "kind": "XNet", "name": "net-abc"}}});
        let v1 = json!({"metadata": {}, "spec": {"resourceRefs": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": "x"}]}});
        let v2 = json!({"metadata": {"namespace": "team"}, "spec": {"crossplane": {"resourceRefs": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}]}}});
        let r = |api_version: &str, kind: &str, name: &str, ns: Option<&str>| Reference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            namespace: ns.map(Into::into),
        };
        assert_eq!(
            references(&claim),
            vec![r("example.org/v1", "XNet", "net-abc", Some("team"))]
        );
        assert_eq!(references(&v1), vec![r("v1", "ConfigMap", "c", Some("x"))]);
        assert_eq!(
            references(&v2),
            vec![r("v1", "ConfigMap", "c", Some("team"))]
        );
    }

    #[test]
    fn dot_labels_each_object_and_links_it_to_its_parent() {
        let tree = node(
            json!({"apiVersion": "example.org/v1", "kind": "XNet", "metadata": {"name": "net"}}),
            vec![node(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}),
                vec![],
            )],
        );
        assert_eq!(
            dot(&[tree]),
            "graph {\n\
             \tn1[label=\"Name: XNet/net\\nApiVersion: example.org/v1\\nReady: \\nSynced: \\n\",penwidth=\"2\"];\n\
             \tn2[label=\"Name: ConfigMap/c\\nApiVersion: v1\\nNamespace: ns\\nReady: \\nSynced: \\n\",penwidth=\"2\"];\n\
             \tn1--n2;\n\
             }\n"
        );
    }
}
