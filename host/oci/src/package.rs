//! Crossplane packages (xpkg): OCI images whose layers hold a
//! `package.yaml` of the package's metadata and the CRDs (or XRDs) it
//! installs. plait reads them for the schemas they carry, pulling them
//! through the same session, verification and blob cache as functions.

use crate::{Client, Error, Keychain, pinned};

/// The largest package image layer accepted: providers' CRDs run to tens
/// of megabytes.
pub const MAX_PACKAGE_LAYER_BYTES: u64 = 256 << 20;

/// A package image, resolved to its manifest digest, with its layers'
/// bytes in the manifest's order.
#[derive(Debug, Clone)]
pub struct PackageImage {
    pub reference: String,
    /// The reference pinned to the manifest's digest.
    pub pinned: String,
    pub digest: String,
    pub layers: Vec<Vec<u8>>,
}

impl Client {
    /// Pulls an image's layers, each verified against its digest and at
    /// most [`MAX_PACKAGE_LAYER_BYTES`].
    pub async fn pull_package(
        &self,
        reference: &str,
        keychain: &Keychain,
    ) -> Result<PackageImage, Error> {
        let session = self.session(reference, keychain)?;
        let (digest, manifest) = self.manifest(&session).await?;
        let mut layers = Vec::with_capacity(manifest.layers.len());
        for layer in &manifest.layers {
            if layer.size > MAX_PACKAGE_LAYER_BYTES {
                return Err(Error::TooLarge {
                    reference: session.name.clone(),
                    what: "a package layer",
                    size: layer.size,
                    limit: MAX_PACKAGE_LAYER_BYTES,
                });
            }
            layers.push(self.blob(&session, layer, MAX_PACKAGE_LAYER_BYTES).await?);
        }
        Ok(PackageImage {
            reference: reference.to_string(),
            pinned: pinned(&session.reference, &digest),
            digest,
            layers,
        })
    }
}
