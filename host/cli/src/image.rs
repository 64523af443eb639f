//! `plait image …`: plait's own controller image, built without a
//! container engine. `build` packs a static plait binary as an OCI image
//! (one layer on scratch: the binary, a non-root user, CA certificates)
//! written as an OCI image layout; `push` sends a layout to a registry
//! through plait's registry client, and signs it as `plait function push`
//! does.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::function::{RegistryArgs, signing_key};

/// Where the binary, the CA bundle and the users live in the image.
pub const BINARY_PATH: &str = "usr/local/bin/plait";
pub const CA_BUNDLE_PATH: &str = "etc/ssl/certs/ca-certificates.crt";
/// The user the controller runs as (distroless's `nonroot`), the one
/// deploy/'s Deployment and the chart ask for.
pub const USER_ID: u64 = 65532;
const HOME: &str = "home/nonroot";

const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
const CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
const LAYER_MEDIA_TYPE: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
const REF_NAME: &str = "org.opencontainers.image.ref.name";

#[derive(clap::Subcommand)]
pub enum ImageCommand {
    /// Pack a static plait binary as the controller's OCI image, written
    /// as an OCI image layout; prints its digest and sizes.
    Build(BuildArgs),
    /// Push an OCI image layout's image to a registry; prints `REF@sha256:…`.
    Push(PushArgs),
}

#[derive(clap::Args)]
pub struct BuildArgs {
    /// The plait binary, statically linked (built for a `*-linux-musl` target).
    #[arg(long)]
    pub binary: PathBuf,
    /// The OCI image layout to write; an existing layout there is replaced.
    #[arg(long)]
    pub output: PathBuf,
    /// The tag recorded in the layout's index.
    #[arg(long, default_value = env!("CARGO_PKG_VERSION"))]
    pub tag: String,
    /// The version the image's labels record.
    #[arg(long, default_value = env!("CARGO_PKG_VERSION"))]
    pub version: String,
    /// The source revision (a commit) the image's labels record.
    #[arg(long)]
    pub revision: Option<String>,
    /// When the image was made, in seconds since 1970 [default:
    /// $SOURCE_DATE_EPOCH, else 0]. The same inputs always give the same digest.
    #[arg(long = "created-epoch")]
    pub created_epoch: Option<u64>,
    /// The CA certificates the image trusts when it reaches registries (a PEM bundle).
    #[arg(
        long = "ca-certificates",
        default_value = "/etc/ssl/certs/ca-certificates.crt"
    )]
    pub ca_certificates: PathBuf,
}

#[derive(clap::Args)]
pub struct PushArgs {
    /// The OCI image layout (as `plait image build` writes it).
    pub layout: PathBuf,
    /// Where to push it: registry/repository:tag.
    pub reference: String,
    /// Sign the pushed image with this cosign private key; its password is
    /// read from $COSIGN_PASSWORD.
    #[arg(long, value_name = "KEY")]
    pub sign: Option<PathBuf>,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

pub fn run(command: &ImageCommand) -> Result<String> {
    match command {
        ImageCommand::Build(args) => build(args),
        ImageCommand::Push(args) => push(args),
    }
}

fn build(args: &BuildArgs) -> Result<String> {
    let binary = std::fs::read(&args.binary)
        .with_context(|| format!("cannot read the binary {}", args.binary.display()))?;
    let architecture = static_elf_architecture(&binary)
        .with_context(|| format!("--binary {}", args.binary.display()))?;
    let ca_bundle = std::fs::read(&args.ca_certificates).with_context(|| {
        format!(
            "cannot read the CA certificates {} (Debian's ca-certificates package)",
            args.ca_certificates.display()
        )
    })?;
    if !ca_bundle
        .windows(b"-----BEGIN CERTIFICATE-----".len())
        .any(|w| w == b"-----BEGIN CERTIFICATE-----")
    {
        bail!(
            "--ca-certificates {}: no PEM certificate in it",
            args.ca_certificates.display()
        );
    }
    let created_epoch = match args.created_epoch {
        Some(epoch) => epoch,
        None => match std::env::var("SOURCE_DATE_EPOCH") {
            Ok(text) => text
                .trim()
                .parse()
                .with_context(|| format!("$SOURCE_DATE_EPOCH {text:?}: not a number of seconds"))?,
            Err(_) => 0,
        },
    };
    let labels = Labels {
        version: &args.version,
        revision: args.revision.as_deref(),
        created: rfc3339(created_epoch),
    };
    let image = pack(&binary, &ca_bundle, architecture, &labels, created_epoch)?;
    write_layout(&args.output, &image, &args.tag)?;
    Ok(format!(
        "{}\nlayout: {}\nplatform: linux/{architecture}\nbinary: {} bytes\nlayer: {} bytes compressed\n",
        image.manifest_digest,
        args.output.display(),
        binary.len(),
        image.layer.len()
    ))
}

/// The OCI image spec's architecture of a static ELF executable; an error
/// names why any other file cannot run on scratch.
fn static_elf_architecture(binary: &[u8]) -> Result<&'static str> {
    let field = |offset: usize, len: usize| -> Result<u64> {
        let bytes = offset
            .checked_add(len)
            .and_then(|end| binary.get(offset..end))
            .context("not an ELF executable: it ends inside its header")?;
        Ok(bytes
            .iter()
            .rev()
            .fold(0u64, |value, byte| (value << 8) | u64::from(*byte)))
    };
    if binary.get(..4) != Some(b"\x7fELF") {
        bail!("not an ELF executable");
    }
    // 64-bit (class 2), little-endian (data 1): every platform plait ships for.
    if binary.get(4..6) != Some(&[2, 1]) {
        bail!("not a 64-bit little-endian ELF executable");
    }
    let architecture = match field(0x12, 2)? {
        0x3e => "amd64",
        0xb7 => "arm64",
        machine => bail!("ELF machine {machine:#x} is neither x86-64 nor AArch64"),
    };
    let table = usize::try_from(field(0x20, 8)?).context("program header offset")?;
    let entry_size = usize::try_from(field(0x36, 2)?).context("program header size")?;
    let entries = usize::try_from(field(0x38, 2)?).context("program header count")?;
    const PT_INTERP: u64 = 3;
    for index in 0..entries {
        let entry = index
            .checked_mul(entry_size)
            .and_then(|offset| offset.checked_add(table))
            .context("not an ELF executable: its program headers lie beyond its end")?;
        if field(entry, 4)? == PT_INTERP {
            bail!(
                "dynamically linked (it names a program interpreter), so it cannot run on an \
                 image without libraries; build it for x86_64-unknown-linux-musl (make image)"
            );
        }
    }
    Ok(architecture)
}

/// What the image's labels and the manifest's annotations say of it.
struct Labels<'a> {
    version: &'a str,
    revision: Option<&'a str>,
    created: String,
}

impl Labels<'_> {
    /// The OCI image spec's pre-defined annotation keys, as labels and annotations both.
    fn to_map(&self) -> BTreeMap<String, String> {
        let mut map: BTreeMap<String, String> = [
            ("org.opencontainers.image.title", "plait"),
            (
                "org.opencontainers.image.description",
                env!("CARGO_PKG_DESCRIPTION"),
            ),
            ("org.opencontainers.image.version", self.version),
            ("org.opencontainers.image.created", &self.created),
            (
                "org.opencontainers.image.licenses",
                env!("CARGO_PKG_LICENSE"),
            ),
            ("org.opencontainers.image.source", REPOSITORY),
            ("org.opencontainers.image.url", REPOSITORY),
            ("org.opencontainers.image.vendor", "plait"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        if let Some(revision) = self.revision {
            map.insert("org.opencontainers.image.revision".into(), revision.into());
        }
        map
    }
}

const REPOSITORY: &str = "https://github.com/plait-dev/plait";

/// An image's blobs and manifest, each with its digest.
struct Image {
    layer: Vec<u8>,
    layer_digest: String,
    config: Vec<u8>,
    config_digest: String,
    manifest: Vec<u8>,
    manifest_digest: String,
    architecture: &'static str,
}

fn pack(
    binary: &[u8],
    ca_bundle: &[u8],
    architecture: &'static str,
    labels: &Labels,
    created_epoch: u64,
) -> Result<Image> {
    let tar = rootfs(binary, ca_bundle, created_epoch).context("cannot write the layer")?;
    let diff_id = plait_oci::digest(&tar);
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gzip.write_all(&tar).context("cannot compress the layer")?;
    let layer = gzip.finish().context("cannot compress the layer")?;
    let annotations = labels.to_map();
    let config = serde_json::to_vec(&json!({
        "created": labels.created,
        "architecture": architecture,
        "os": "linux",
        "config": {
            "User": format!("{USER_ID}:{USER_ID}"),
            "Env": [
                "PATH=/usr/local/bin",
                format!("HOME=/{HOME}"),
                format!("SSL_CERT_FILE=/{CA_BUNDLE_PATH}"),
            ],
            "Entrypoint": [format!("/{BINARY_PATH}")],
            "Cmd": ["controller"],
            "WorkingDir": format!("/{HOME}"),
            "Labels": annotations,
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{
            "created": labels.created,
            "created_by": "plait image build",
            "comment": "the static plait binary, a non-root user and CA certificates on scratch",
        }],
    }))?;
    let layer_digest = plait_oci::digest(&layer);
    let config_digest = plait_oci::digest(&config);
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": descriptor(CONFIG_MEDIA_TYPE, &config_digest, config.len()),
        "layers": [descriptor(LAYER_MEDIA_TYPE, &layer_digest, layer.len())],
        "annotations": annotations,
    }))?;
    Ok(Image {
        manifest_digest: plait_oci::digest(&manifest),
        layer,
        layer_digest,
        config,
        config_digest,
        manifest,
        architecture,
    })
}

fn descriptor(media_type: &str, digest: &str, size: usize) -> Value {
    json!({"mediaType": media_type, "digest": digest, "size": size})
}

/// The image's file system as a tar stream: the same bytes for the same
/// inputs (fixed owners and times, a fixed order).
fn rootfs(binary: &[u8], ca_bundle: &[u8], mtime: u64) -> std::io::Result<Vec<u8>> {
    let passwd = format!(
        "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:{USER_ID}:{USER_ID}:nonroot:/{HOME}:/sbin/nologin\n"
    );
    let group = format!("root:x:0:\nnonroot:x:{USER_ID}:\n");
    // (path, mode, owner, contents; None for a directory)
    let entries: [(&str, u32, u64, Option<&[u8]>); 12] = [
        ("etc/", 0o755, 0, None),
        ("etc/group", 0o644, 0, Some(group.as_bytes())),
        ("etc/passwd", 0o644, 0, Some(passwd.as_bytes())),
        ("etc/ssl/", 0o755, 0, None),
        ("etc/ssl/certs/", 0o755, 0, None),
        (CA_BUNDLE_PATH, 0o644, 0, Some(ca_bundle)),
        ("home/", 0o755, 0, None),
        ("home/nonroot/", 0o700, USER_ID, None),
        // Writable scratch space; a Deployment with a read-only root mounts its own.
        ("tmp/", 0o1777, 0, None),
        ("usr/", 0o755, 0, None),
        ("usr/local/", 0o755, 0, None),
        ("usr/local/bin/", 0o755, 0, None),
    ];
    let mut tar = tar::Builder::new(Vec::new());
    let mut append = |path: &str, mode: u32, owner: u64, contents: Option<&[u8]>| {
        let mut header = tar::Header::new_ustar();
        header.set_mode(mode);
        header.set_uid(owner);
        header.set_gid(owner);
        header.set_mtime(mtime);
        match contents {
            Some(bytes) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(bytes.len() as u64);
                tar.append_data(&mut header, path, bytes)
            }
            None => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_size(0);
                tar.append_data(&mut header, path, std::io::empty())
            }
        }
    };
    for (path, mode, owner, contents) in entries {
        append(path, mode, owner, contents)?;
    }
    append(BINARY_PATH, 0o755, 0, Some(binary))?;
    tar.into_inner()
}

/// `epoch` (seconds since 1970, UTC) as RFC 3339, as image configs write time.
fn rfc3339(epoch: u64) -> String {
    let seconds = epoch % 86_400;
    let (year, month, day) =
        crate::webhook_certificate::civil_date(i64::try_from(epoch / 86_400).unwrap_or(i64::MAX));
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        seconds / 3600,
        seconds % 3600 / 60,
        seconds % 60
    )
}

/// Writes `image` as an OCI image layout at `dir`, its index naming it `tag`.
fn write_layout(dir: &Path, image: &Image, tag: &str) -> Result<()> {
    if dir.exists() {
        if !dir.join("oci-layout").is_file() {
            bail!(
                "--output {}: exists and is not an OCI image layout; not replacing it",
                dir.display()
            );
        }
        std::fs::remove_dir_all(dir)
            .with_context(|| format!("cannot remove the old layout {}", dir.display()))?;
    }
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs)
        .with_context(|| format!("cannot create {}", blobs.display()))?;
    for (bytes, digest) in [
        (&image.layer, &image.layer_digest),
        (&image.config, &image.config_digest),
        (&image.manifest, &image.manifest_digest),
    ] {
        let path = blobs.join(digest.trim_start_matches("sha256:"));
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let mut manifest = descriptor(
        MANIFEST_MEDIA_TYPE,
        &image.manifest_digest,
        image.manifest.len(),
    );
    manifest["annotations"] = json!({ REF_NAME: tag });
    manifest["platform"] = json!({"architecture": image.architecture, "os": "linux"});
    let index = json!({"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": [manifest]});
    for (name, contents) in [
        ("oci-layout", json!({"imageLayoutVersion": "1.0.0"})),
        ("index.json", index),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, serde_json::to_vec(&contents)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// A layout's one image: its manifest and the blobs it names (config
/// first), each read from the layout and checked against its digest.
struct LaidOut {
    manifest: Vec<u8>,
    blobs: Vec<(Vec<u8>, String)>,
}

fn read_layout(dir: &Path) -> Result<LaidOut> {
    let read_json = |path: PathBuf| -> Result<(Vec<u8>, Value)> {
        let bytes =
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let value = serde_json::from_slice(&bytes)
            .with_context(|| format!("{}: not JSON", path.display()))?;
        Ok((bytes, value))
    };
    let (_, index) = read_json(dir.join("index.json"))
        .with_context(|| format!("{} is not an OCI image layout", dir.display()))?;
    let manifests = index["manifests"]
        .as_array()
        .with_context(|| format!("{}/index.json: no `manifests` list", dir.display()))?;
    let [manifest] = &manifests[..] else {
        bail!(
            "{}/index.json: {} manifests; a layout to push holds exactly one image",
            dir.display(),
            manifests.len()
        );
    };
    let blob = |descriptor: &Value, what: &str| -> Result<(Vec<u8>, String)> {
        let digest = descriptor["digest"]
            .as_str()
            .with_context(|| format!("{}: the {what} has no digest", dir.display()))?;
        let hex = digest
            .strip_prefix("sha256:")
            .filter(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .with_context(|| {
                format!(
                    "{}: the {what}'s digest {digest} is not sha256",
                    dir.display()
                )
            })?;
        let path = dir.join("blobs/sha256").join(hex);
        let bytes =
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let actual = plait_oci::digest(&bytes);
        if actual != digest {
            bail!(
                "{}: holds bytes whose digest is {actual}; the layout is corrupt",
                path.display()
            );
        }
        Ok((bytes, digest.to_string()))
    };
    let (manifest, _) = blob(manifest, "manifest")?;
    let parsed: Value = serde_json::from_slice(&manifest)
        .with_context(|| format!("{}: the manifest is not JSON", dir.display()))?;
    let mut blobs = vec![blob(&parsed["config"], "config")?];
    for layer in parsed["layers"].as_array().into_iter().flatten() {
        blobs.push(blob(layer, "layer")?);
    }
    Ok(LaidOut { manifest, blobs })
}

fn push(args: &PushArgs) -> Result<String> {
    let laid_out = read_layout(&args.layout)?;
    // The key is opened first: a wrong password must not leave an unsigned push behind.
    let signing_key = args.sign.as_deref().map(signing_key).transpose()?;
    let registry = args.registry.open(&[&args.reference])?;
    let blobs: Vec<(&[u8], &String)> = laid_out
        .blobs
        .iter()
        .map(|(bytes, digest)| (&bytes[..], digest))
        .collect();
    let pushed = registry
        .executor
        .block_on(registry.client.push_manifest(
            &args.reference,
            &blobs,
            laid_out.manifest,
            &registry.keychain,
        ))
        .with_context(|| format!("cannot push {}", args.layout.display()))?;
    crate::function::signed(&registry, &pushed, signing_key)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// A 64-bit little-endian ELF header for `machine` with one program
    /// header of type `segment`.
    fn elf(machine: u16, segment: u32) -> Vec<u8> {
        let mut bytes = vec![0u8; 0x40 + 0x38];
        bytes[..4].copy_from_slice(b"\x7fELF");
        bytes[4] = 2;
        bytes[5] = 1;
        bytes[0x12..0x14].copy_from_slice(&machine.to_le_bytes());
        bytes[0x20..0x28].copy_from_slice(&0x40u64.to_le_bytes());
        bytes[0x36..0x38].copy_from_slice(&0x38u16.to_le_bytes());
        bytes[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes());
        bytes[0x40..0x44].copy_from_slice(&segment.to_le_bytes());
        bytes
    }

    #[test]
    fn only_static_x86_64_and_aarch64_executables_are_packed() {
        const PT_LOAD: u32 = 1;
        const PT_INTERP: u32 = 3;
        let cases: [(&str, Vec<u8>, Result<&str, &str>); 6] = [
            ("static x86-64", elf(0x3e, PT_LOAD), Ok("amd64")),
            ("static aarch64", elf(0xb7, PT_LOAD), Ok("arm64")),
            (
                "dynamic x86-64",
                elf(0x3e, PT_INTERP),
                Err("dynamically linked"),
            ),
            (
                "riscv",
                elf(0xf3, PT_LOAD),
                Err("neither x86-64 nor AArch64"),
            ),
            ("a script", b"#!/bin/sh\n".to_vec(), Err("not an ELF")),
            (
                "truncated",
                elf(0x3e, PT_LOAD)[..0x30].to_vec(),
                Err("ends inside its header"),
            ),
        ];
        for (name, binary, want) in cases {
            match (static_elf_architecture(&binary), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{name}"),
                (Err(got), Err(want)) => {
                    assert!(format!("{got:#}").contains(want), "{name}: {got:#}")
                }
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn epochs_are_written_as_rfc3339() {
        let cases = [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_796_000_000, "2026-11-30T00:53:20Z"),
        ];
        for (epoch, want) in cases {
            assert_eq!(rfc3339(epoch), want, "{epoch}");
        }
    }

    fn labels() -> Labels<'static> {
        Labels {
            version: "1.2.3",
            revision: Some("abc123"),
            created: rfc3339(0),
        }
    }

    #[test]
    fn the_same_inputs_pack_the_same_image_and_its_layout_reads_back() {
        let binary = elf(0x3e, 1);
        let first = pack(&binary, b"certs", "amd64", &labels(), 0).unwrap();
        let second = pack(&binary, b"certs", "amd64", &labels(), 0).unwrap();
        assert_eq!(first.manifest_digest, second.manifest_digest);

        let dir = tempfile::tempdir().unwrap();
        let layout = dir.path().join("layout");
        write_layout(&layout, &first, "1.2.3").unwrap();
        // A second write replaces the layout it wrote.
        write_layout(&layout, &first, "1.2.3").unwrap();
        let read = read_layout(&layout).unwrap();
        assert_eq!(read.manifest, first.manifest);
        let digests: Vec<&str> = read.blobs.iter().map(|(_, d)| d.as_str()).collect();
        assert_eq!(digests, [&first.config_digest, &first.layer_digest]);

        let config: Value = serde_json::from_slice(&first.config).unwrap();
        assert_eq!(config["config"]["User"], "65532:65532");
        assert_eq!(
            config["config"]["Entrypoint"],
            json!(["/usr/local/bin/plait"])
        );
        assert_eq!(
            config["config"]["Labels"]["org.opencontainers.image.revision"],
            "abc123"
        );
        let manifest: Value = serde_json::from_slice(&first.manifest).unwrap();
        assert_eq!(
            manifest["annotations"]["org.opencontainers.image.version"],
            "1.2.3"
        );
    }

    #[test]
    fn the_layer_holds_the_binary_the_user_and_the_certificates() {
        let binary = elf(0x3e, 1);
        let image = pack(&binary, b"certs", "amd64", &labels(), 0).unwrap();
        let mut entries = BTreeMap::new();
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&image.layer[..]));
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().display().to_string();
            let mode = entry.header().mode().unwrap();
            let mut contents = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut contents).unwrap();
            entries.insert(path, (mode, contents));
        }
        assert_eq!(entries[BINARY_PATH], (0o755, binary));
        assert_eq!(entries[CA_BUNDLE_PATH].1, b"certs");
        let passwd = String::from_utf8(entries["etc/passwd"].1.clone()).unwrap();
        assert!(passwd.contains("nonroot:x:65532:65532:"), "{passwd}");
        assert_eq!(entries["tmp/"].0, 0o1777);
    }

    #[test]
    fn a_layout_with_a_corrupt_blob_or_not_a_layout_is_refused() {
        let image = pack(&elf(0x3e, 1), b"certs", "amd64", &labels(), 0).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let layout = dir.path().join("layout");
        write_layout(&layout, &image, "t").unwrap();
        let layer = layout
            .join("blobs/sha256")
            .join(image.layer_digest.trim_start_matches("sha256:"));
        std::fs::write(&layer, b"tampered").unwrap();
        let error = format!("{:#}", read_layout(&layout).err().unwrap());
        assert!(error.contains("the layout is corrupt"), "{error}");

        let not_layout = dir.path().join("other");
        std::fs::create_dir(&not_layout).unwrap();
        std::fs::write(not_layout.join("keep"), b"").unwrap();
        let error = format!(
            "{:#}",
            write_layout(&not_layout, &image, "t").err().unwrap()
        );
        assert!(error.contains("not an OCI image layout"), "{error}");
        assert!(not_layout.join("keep").exists());
    }
}
