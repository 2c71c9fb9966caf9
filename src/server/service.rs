//! The MCP face of the server: an rmcp `ServerHandler` over stdio that lists
//! [`super::tools::TOOLS`] and hands every call to [`Server::call`] on a blocking thread.
//! stdout is the transport ([`stdio`]: every malformed line gets a JSON-RPC error); logs
//! go to stderr through `tracing`.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::{Map, Value};

use super::core::Server;
use super::tools::TOOLS;

pub(crate) mod stdio;

/// The rmcp handler: a cheap clone of a shared [`Server`].
#[derive(Clone)]
pub(crate) struct Service {
    server: Arc<Server>,
}

impl Service {
    pub(crate) fn new(server: Server) -> Service {
        Service {
            server: Arc::new(server),
        }
    }
}

const INSTRUCTIONS: &str = "code-intel walks you through understanding a codebase before changing it. Start every coding task with start_session (the user's request verbatim, their flags as typed), then follow each response's `instruction` and answer only with submit_phase. Code tools (search_text, find_definitions, ...) are allowed per phase; a refusal says which are. After a context compaction call get_session_status.";

impl ServerHandler for Service {
    fn get_info(&self) -> ServerConfig {
        let mut info = InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions(INSTRUCTIONS);
        info.server_info = Implementation::new("code-intel", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.server.set_client(&request.client_info.name);
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = TOOLS
            .iter()
            .map(|spec| {
                let schema = match (spec.schema)() {
                    Value::Object(map) => map,
                    _ => Map::new(),
                };
                Tool::new(spec.name, spec.description, Arc::new(schema))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // A client that asked for progress hears how far the first index build is, since
        // symbol answers are text matches until it finishes.
        if let (Some(token), Some((done, total))) = (
            context.meta.get_progress_token(),
            self.server.index_building(),
        ) {
            let mut progress = ProgressNotificationParam::new(token, done as f64);
            progress.total = Some(total as f64);
            progress.message = Some(self.server.text(
                "progress.index_building",
                &[
                    ("done", serde_json::json!(done)),
                    ("total", serde_json::json!(total)),
                ],
                format!("building the symbol index: {done} of {total} files tagged"),
            ));
            if let Err(e) = context.peer.notify_progress(progress).await {
                tracing::debug!("progress notification not delivered: {e}");
            }
        }
        let server = Arc::clone(&self.server);
        let texts = Arc::clone(&self.server);
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        let tool = name.clone();
        let reply = tokio::task::spawn_blocking(move || server.call(&tool, args)).await;
        let result = match reply {
            Ok(reply) if reply.is_error => CallToolResult::structured_error(reply.body),
            Ok(reply) => CallToolResult::structured(reply.body),
            Err(e) => {
                // A panic in a tool is a bug; the agent still gets an answer, never silence.
                tracing::error!("tool {name} failed: {e}");
                CallToolResult::structured_error(serde_json::json!({
                    "error": "internal",
                    "message_key": "server.internal_failure",
                    "message": texts.text(
                        "server.internal_failure",
                        &[("tool", serde_json::json!(name))],
                        format!("the server failed while running {name}; the session state is unchanged"),
                    ),
                }))
            }
        };
        Ok(result.into())
    }
}

/// Runs the server on stdin/stdout until the client disconnects.
pub(crate) fn serve_stdio(server: Server) -> Result<(), ServeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?;
    runtime.block_on(async move {
        let running = Service::new(server)
            .serve(stdio::LineTransport::new(
                tokio::io::stdin(),
                tokio::io::stdout(),
            ))
            .await
            .map_err(|e| ServeError::Initialise(Box::new(e)))?;
        running.waiting().await.map_err(ServeError::Stopped)?;
        Ok(())
    })
}

/// Why serving over stdio ended with an error.
#[derive(Debug)]
pub(crate) enum ServeError {
    /// The async runtime could not be built.
    Runtime(std::io::Error),
    /// The MCP handshake failed (the client sent no valid `initialize`).
    Initialise(Box<rmcp::service::ServerInitializeError>),
    /// The service task ended abnormally.
    Stopped(tokio::task::JoinError),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Runtime(e) => write!(f, "cannot start the async runtime: {e}"),
            ServeError::Initialise(e) => write!(f, "MCP initialisation failed: {e}"),
            ServeError::Stopped(e) => write!(f, "the server stopped: {e}"),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Runtime(e) => Some(e),
            ServeError::Initialise(e) => Some(e),
            ServeError::Stopped(e) => Some(e),
        }
    }
}
