//! Upstream Crossplane, built from its Go modules: the `crossplane` CLI, the
//! core binary it runs for `crossplane internal render`, and the functions,
//! served on loopback for the whole suite.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{Error, Rendered, parse_stream};

/// The upstream functions the suite serves, by what a Function's package names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamFunction {
    PatchAndTransform,
    AutoReady,
}

impl UpstreamFunction {
    const ALL: [UpstreamFunction; 2] = [
        UpstreamFunction::PatchAndTransform,
        UpstreamFunction::AutoReady,
    ];

    fn binary(self) -> &'static str {
        match self {
            UpstreamFunction::PatchAndTransform => "function-patch-and-transform",
            UpstreamFunction::AutoReady => "function-auto-ready",
        }
    }

    /// Which upstream function a Function package (or, without one, a
    /// functionRef name) stands for.
    pub fn for_package(package_or_name: &str) -> Option<UpstreamFunction> {
        if package_or_name.contains("function-patch-and-transform") {
            Some(UpstreamFunction::PatchAndTransform)
        } else if package_or_name.contains("function-auto-ready") {
            Some(UpstreamFunction::AutoReady)
        } else {
            None
        }
    }
}

/// The upstream binaries and the function servers started from them; the
/// servers stop when this is dropped.
pub struct Upstream {
    bin: PathBuf,
    servers: Vec<(UpstreamFunction, SocketAddr, Child)>,
}

/// The inputs of one `crossplane render`.
pub struct RenderInput<'a> {
    pub xr: &'a Path,
    /// A `mode: Pipeline` Composition.
    pub composition: &'a Path,
    /// Function objects naming each step's function (package or name).
    pub functions: &'a [Value],
    pub xrd: Option<&'a Path>,
    pub required: &'a [PathBuf],
    pub observed: Option<&'a Path>,
}

impl Upstream {
    /// Builds upstream (or finds the cached build) with `build_script` and
    /// starts every function server.
    pub fn start(build_script: &Path) -> Result<Upstream, Error> {
        let out = Command::new(build_script)
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| Error::Io(format!("running {}", build_script.display()), e))?;
        if !out.status.success() {
            return Err(Error::Build(format!(
                "{} exited with {}",
                build_script.display(),
                out.status
            )));
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let bin = stdout
            .lines()
            .last()
            .map(PathBuf::from)
            .ok_or_else(|| Error::Build("the build script printed no bin directory".into()))?;
        let mut upstream = Upstream {
            bin,
            servers: Vec::new(),
        };
        for function in UpstreamFunction::ALL {
            let addr = free_loopback_port()?;
            let child = Command::new(upstream.bin.join(function.binary()))
                .args(["--insecure", "--address", &addr.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| Error::Io(format!("starting {}", function.binary()), e))?;
            upstream.servers.push((function, addr, child));
            wait_for_listener(addr, function.binary())?;
        }
        Ok(upstream)
    }

    fn address(&self, function: UpstreamFunction) -> Option<SocketAddr> {
        self.servers
            .iter()
            .find(|(f, _, _)| *f == function)
            .map(|(_, addr, _)| *addr)
    }

    /// Function objects for `crossplane render`: each named function runs in
    /// the Development runtime, pointed at its server. `None` when a
    /// function has no upstream build here.
    pub fn development_functions(&self, functions: &[Value]) -> Result<Vec<Value>, String> {
        functions
            .iter()
            .map(|f| {
                let name = f
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let package = f
                    .pointer("/spec/package")
                    .and_then(Value::as_str)
                    .unwrap_or(name);
                let function = UpstreamFunction::for_package(package).ok_or_else(|| {
                    format!("function {name:?} ({package}) has no upstream build")
                })?;
                let addr = self
                    .address(function)
                    .ok_or_else(|| format!("function {name:?} is not being served"))?;
                Ok(json!({
                    "apiVersion": "pkg.crossplane.io/v1",
                    "kind": "Function",
                    "metadata": {
                        "name": name,
                        "annotations": {
                            "render.crossplane.io/runtime": "Development",
                            "render.crossplane.io/runtime-development-target": addr.to_string(),
                        },
                    },
                    "spec": {"package": package},
                }))
            })
            .collect()
    }

    /// Runs `crossplane render -r` with the core binary, in `scratch`.
    pub fn render(&self, input: &RenderInput, scratch: &Path) -> Result<Rendered, Error> {
        let functions = match self.development_functions(input.functions) {
            Ok(f) => f,
            Err(why) => return Ok(Rendered::NotComparable(why)),
        };
        let functions_file = scratch.join("upstream-functions.yaml");
        let text = functions
            .iter()
            .map(|f| serde_yaml_ng::to_string(f).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("---\n");
        std::fs::write(&functions_file, text)
            .map_err(|e| Error::Io(format!("writing {}", functions_file.display()), e))?;
        let mut command = Command::new(self.bin.join("crossplane"));
        command
            .arg("render")
            .arg(input.xr)
            .arg(input.composition)
            .arg(&functions_file)
            .arg("--include-function-results")
            .arg("--crossplane-binary")
            .arg(self.bin.join("crossplane-core"))
            .current_dir(scratch)
            .env("HOME", scratch)
            .env("CROSSPLANE_XPKG_CACHE", scratch.join("xpkg-cache"));
        if let Some(xrd) = input.xrd {
            command.arg("--xrd").arg(xrd);
        }
        for required in input.required {
            command.arg("--required-resources").arg(required);
        }
        if let Some(observed) = input.observed {
            command.arg("--observed-resources").arg(observed);
        }
        let out = command
            .output()
            .map_err(|e| Error::Io("running crossplane render".into(), e))?;
        if !out.status.success() {
            return Ok(Rendered::Failed(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        Ok(Rendered::Output(parse_stream(&String::from_utf8_lossy(
            &out.stdout,
        ))?))
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        for (_, _, child) in &mut self.servers {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn free_loopback_port() -> Result<SocketAddr, Error> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::Io("binding a loopback port".into(), e))?;
    listener
        .local_addr()
        .map_err(|e| Error::Io("reading a loopback port".into(), e))
}

fn wait_for_listener(addr: SocketAddr, what: &str) -> Result<(), Error> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(Error::Build(format!("{what} did not listen on {addr}")))
}
