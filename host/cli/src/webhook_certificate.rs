//! The webhook's serving certificate when plait manages it, as Crossplane's
//! core does, so no cert-manager is needed: a CA in the Secret
//! `plait-root-ca` and a serving certificate it signs in `plait-tls-server`
//! (both in the controller's namespace, valid ten years), made by the first
//! replica that finds them missing and shared by every other; and the CA
//! written as `caBundle` into each webhook of the
//! ValidatingWebhookConfiguration, again whenever it lacks it.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow};
use base64::Engine;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use serde_json::{Value, json};

/// The Secret holding the CA (`tls.crt`, `tls.key`).
pub const CA_SECRET: &str = "plait-root-ca";
/// The Secret holding the serving certificate (`tls.crt`, `tls.key`, `ca.crt`).
pub const SERVER_SECRET: &str = "plait-tls-server";
/// How long the certificates are valid, as upstream's.
const VALIDITY_YEARS: i32 = 10;
/// How often the ValidatingWebhookConfiguration is checked for its caBundle.
pub const INJECT_INTERVAL: Duration = Duration::from_secs(30);

/// A certificate and its private key, PEM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub cert_pem: String,
    pub key_pem: String,
}

/// What the webhook serves with, and the CA that signed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServingIdentity {
    pub server: Pair,
    pub ca_pem: String,
}

/// The DNS names of a Service, as the API server may call it.
pub fn service_names(service: &str, namespace: &str) -> Vec<String> {
    vec![
        service.to_string(),
        format!("{service}.{namespace}"),
        format!("{service}.{namespace}.svc"),
    ]
}

/// The CA's subject; the serving certificate's issuer is read from it, so
/// a CA loaded from its Secret signs exactly as the one first generated.
fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = name("plait-root-ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params
}

fn name(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    name.push(DnType::OrganizationName, "plait");
    name
}

/// From today for [`VALIDITY_YEARS`].
fn valid_from_now(params: &mut CertificateParams) {
    let days = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or_default();
    let (year, month, day) = civil_date(i64::try_from(days).unwrap_or_default());
    params.not_before = rcgen::date_time_ymd(year, month, day);
    params.not_after = rcgen::date_time_ymd(year + VALIDITY_YEARS, month, day.min(28));
}

/// The proleptic Gregorian date `days` after 1970-01-01.
pub(crate) fn civil_date(days: i64) -> (i32, u8, u8) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (
        i32::try_from(year).unwrap_or(i32::MAX),
        u8::try_from(month).unwrap_or(1),
        u8::try_from(day).unwrap_or(1),
    )
}

/// A new CA.
pub fn generate_ca() -> Result<Pair> {
    let key = KeyPair::generate().context("cannot generate the webhook's CA key")?;
    let mut params = ca_params();
    valid_from_now(&mut params);
    let cert = params
        .self_signed(&key)
        .context("cannot generate the webhook's CA")?;
    Ok(Pair {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// A serving certificate for `names` (DNS names or IP addresses), signed
/// by `ca`.
pub fn generate_server(ca: &Pair, names: &[String]) -> Result<Pair> {
    let ca_key = KeyPair::from_pem(&ca.key_pem)
        .with_context(|| format!("Secret {CA_SECRET}: tls.key is not a private key"))?;
    let issuer = Issuer::new(ca_params(), ca_key);
    let key = KeyPair::generate().context("cannot generate the webhook's serving key")?;
    let mut params = CertificateParams::new(names.to_vec())
        .with_context(|| format!("the webhook's names {names:?}"))?;
    params.distinguished_name = name("plait-webhook");
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    valid_from_now(&mut params);
    let cert = params
        .signed_by(&key, &issuer)
        .context("cannot sign the webhook's serving certificate")?;
    Ok(Pair {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// The certificates the webhook serves with, in `namespace`: read from
/// their Secrets, or made and stored when a Secret is missing or
/// incomplete. A replica that loses the race to create one uses the
/// winner's.
pub async fn ensure(
    client: &kube::Client,
    namespace: &str,
    names: &[String],
) -> Result<ServingIdentity> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let ca = match stored(&secrets, namespace, CA_SECRET, false).await? {
        Some((pair, _)) => pair,
        None => {
            let ca = generate_ca()?;
            store(&secrets, namespace, CA_SECRET, &ca, None).await?;
            // Whoever stored first, that CA is the one.
            stored(&secrets, namespace, CA_SECRET, false)
                .await?
                .map(|(pair, _)| pair)
                .ok_or_else(|| {
                    anyhow!("Secret {namespace}/{CA_SECRET} is empty after it was written")
                })?
        }
    };
    if let Some((server, Some(ca_pem))) = stored(&secrets, namespace, SERVER_SECRET, true).await? {
        return Ok(ServingIdentity { server, ca_pem });
    }
    let server = generate_server(&ca, names)?;
    store(
        &secrets,
        namespace,
        SERVER_SECRET,
        &server,
        Some(&ca.cert_pem),
    )
    .await?;
    match stored(&secrets, namespace, SERVER_SECRET, true).await? {
        Some((server, Some(ca_pem))) => Ok(ServingIdentity { server, ca_pem }),
        _ => Err(anyhow!(
            "Secret {namespace}/{SERVER_SECRET} is empty after it was written"
        )),
    }
}

/// The pair in Secret `name` (and its `ca.crt` when `with_ca`); `None` when
/// the Secret is missing or incomplete.
async fn stored(
    secrets: &Api<Secret>,
    namespace: &str,
    name: &str,
    with_ca: bool,
) -> Result<Option<(Pair, Option<String>)>> {
    let secret = secrets
        .get_opt(name)
        .await
        .with_context(|| format!("cannot read Secret {namespace}/{name}"))?;
    let data = secret.and_then(|s| s.data).unwrap_or_default();
    let text = |key: &str| -> Result<Option<String>> {
        data.get(key)
            .filter(|bytes| !bytes.0.is_empty())
            .map(|bytes| {
                String::from_utf8(bytes.0.clone())
                    .map_err(|_| anyhow!("Secret {namespace}/{name}: {key} is not PEM text"))
            })
            .transpose()
    };
    let (Some(cert_pem), Some(key_pem)) = (text("tls.crt")?, text("tls.key")?) else {
        return Ok(None);
    };
    let ca = text("ca.crt")?;
    if with_ca && ca.is_none() {
        return Ok(None);
    }
    Ok(Some((Pair { cert_pem, key_pem }, ca)))
}

/// Writes `pair` (and `ca`) into Secret `name`: created when missing,
/// replaced when incomplete; a Secret another replica created meanwhile
/// is left as it is.
async fn store(
    secrets: &Api<Secret>,
    namespace: &str,
    name: &str,
    pair: &Pair,
    ca: Option<&str>,
) -> Result<()> {
    let mut data = BTreeMap::from([
        (
            "tls.crt".to_string(),
            ByteString(pair.cert_pem.clone().into_bytes()),
        ),
        (
            "tls.key".to_string(),
            ByteString(pair.key_pem.clone().into_bytes()),
        ),
    ]);
    if let Some(ca) = ca {
        data.insert("ca.crt".into(), ByteString(ca.as_bytes().to_vec()));
    }
    let error = |verb: &str, source: kube::Error| {
        anyhow!(source).context(format!("cannot {verb} Secret {namespace}/{name}"))
    };
    let existing = secrets
        .get_opt(name)
        .await
        .map_err(|source| error("read", source))?;
    match existing {
        None => {
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    namespace: Some(namespace.into()),
                    labels: Some(BTreeMap::from([(
                        "app.kubernetes.io/name".to_string(),
                        "plait".to_string(),
                    )])),
                    ..ObjectMeta::default()
                },
                type_: Some("kubernetes.io/tls".into()),
                data: Some(data),
                ..Secret::default()
            };
            match secrets.create(&PostParams::default(), &secret).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
                Err(source) => Err(error("create", source)),
            }
        }
        Some(mut secret) => {
            // An incomplete Secret (made by hand, say): filled in, unless
            // another replica filled it first (the resourceVersion moved).
            secret.data = Some(data);
            match secrets.replace(name, &PostParams::default(), &secret).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
                Err(source) => Err(error("update", source)),
            }
        }
    }
}

/// Writes `ca_pem` as the caBundle of every webhook of the
/// ValidatingWebhookConfiguration `name` that does not have it yet; false
/// when the configuration does not exist (yet).
pub async fn inject_ca(client: &kube::Client, name: &str, ca_pem: &str) -> Result<bool> {
    let configurations: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &kube::discovery::ApiResource {
            group: "admissionregistration.k8s.io".into(),
            version: "v1".into(),
            api_version: "admissionregistration.k8s.io/v1".into(),
            kind: "ValidatingWebhookConfiguration".into(),
            plural: "validatingwebhookconfigurations".into(),
        },
    );
    let Some(configuration) = configurations
        .get_opt(name)
        .await
        .with_context(|| format!("cannot read ValidatingWebhookConfiguration {name}"))?
    else {
        return Ok(false);
    };
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let Some(patch) = ca_patch(&configuration.data, &bundle) else {
        return Ok(true);
    };
    configurations
        .patch(name, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .with_context(|| format!("cannot patch ValidatingWebhookConfiguration {name}"))?;
    tracing::info!(
        configuration = name,
        "wrote the webhook CA into its caBundle"
    );
    Ok(true)
}

/// The strategic merge patch giving each webhook of `configuration` that
/// lacks it the caBundle `bundle` (webhooks merge by name); `None` when
/// every one has it.
fn ca_patch(configuration: &Value, bundle: &str) -> Option<Value> {
    let stale: Vec<Value> = configuration["webhooks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|hook| hook["clientConfig"]["caBundle"].as_str() != Some(bundle))
        .map(|hook| json!({"name": hook["name"], "clientConfig": {"caBundle": bundle}}))
        .collect();
    (!stale.is_empty()).then(|| json!({"webhooks": stale}))
}

#[cfg(test)]
mod tests {
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::pem::PemObject;

    use super::*;

    #[test]
    fn days_since_the_epoch_are_the_calendar_dates_they_name() {
        // (days since 1970-01-01, date)
        let cases = [
            (0, (1970, 1, 1)),
            (59, (1970, 3, 1)),
            (11_016, (2000, 2, 29)),
            (20_453, (2025, 12, 31)),
            (20_783, (2026, 11, 26)),
        ];
        for (days, date) in cases {
            assert_eq!(civil_date(days), date, "{days}");
        }
    }

    #[test]
    fn a_ca_loaded_from_its_secret_signs_a_serving_certificate_for_the_names_asked() {
        let ca = generate_ca().unwrap_or_else(|e| panic!("{e}"));
        let names = service_names("plait-webhook", "plait-system");
        let server = generate_server(&ca, &names).unwrap_or_else(|e| panic!("{e}"));
        // The serving certificate chains to the CA, for the Service's name.
        let root = rustls::pki_types::CertificateDer::from_pem_slice(ca.cert_pem.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        let mut roots = rustls::RootCertStore::empty();
        roots.add(root).unwrap_or_else(|e| panic!("{e}"));
        let leaf = rustls::pki_types::CertificateDer::from_pem_slice(server.cert_pem.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            std::sync::Arc::new(roots),
            std::sync::Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
        for name in [
            "plait-webhook.plait-system.svc",
            "plait-webhook.plait-system",
        ] {
            let server_name =
                rustls::pki_types::ServerName::try_from(name).unwrap_or_else(|e| panic!("{e}"));
            let verified = verifier.verify_server_cert(
                &leaf,
                &[],
                &server_name,
                &[],
                rustls::pki_types::UnixTime::now(),
            );
            assert!(verified.is_ok(), "{name}: {verified:?}");
        }
        let other = rustls::pki_types::ServerName::try_from("elsewhere.svc")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            verifier
                .verify_server_cert(&leaf, &[], &other, &[], rustls::pki_types::UnixTime::now())
                .is_err()
        );
    }

    #[test]
    fn only_webhooks_without_the_ca_are_patched() {
        let configuration = json!({"webhooks": [
            {"name": "a", "clientConfig": {"service": {"name": "s"}, "caBundle": "CA"}},
            {"name": "b", "clientConfig": {"service": {"name": "s"}}},
            {"name": "c", "clientConfig": {"service": {"name": "s"}, "caBundle": "OLD"}},
        ]});
        assert_eq!(
            ca_patch(&configuration, "CA"),
            Some(json!({"webhooks": [
                {"name": "b", "clientConfig": {"caBundle": "CA"}},
                {"name": "c", "clientConfig": {"caBundle": "CA"}},
            ]}))
        );
        let done = json!({"webhooks": [{"name": "a", "clientConfig": {"caBundle": "CA"}}]});
        assert_eq!(ca_patch(&done, "CA"), None);
    }
}
