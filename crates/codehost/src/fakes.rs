//! Test support (feature `fakes`, never in a release build): fake GitHub
//! and GitLab APIs on loopback, shared by this crate's tests, the CLI's
//! and the end-to-end tests. They check what real hosts would refuse (the
//! exact auth header, API headers, the body's fields, that the head branch
//! exists on the git server) and keep state: the pull requests created,
//! every request received, and every deviation from what the client
//! should have sent (`problems`, asserted empty).
//!
//! A fake serves the projects whose bare repositories lie under its
//! `served` folder (`{owner}/{repo}.git`), which is what a real git remote
//! (`tracelab_testkit::git_server::GitHttp`) serves too.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where `branch` of the bare repository at `bare` points.
pub fn remote_branch(bare: &std::path::Path, branch: &str) -> Option<String> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(bare)
        .args([
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ])
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The bare repository `{owner}/{repo}.git` under `served`.
pub fn bare(served: &std::path::Path, project: &str) -> PathBuf {
    served.join(format!("{project}.git"))
}

/// What a fake host knows and was asked.
#[derive(Default)]
pub struct HostState {
    /// Pull requests / merge requests, as the host's JSON.
    pub prs: Vec<Value>,
    /// `METHOD /path` of every request, in order.
    pub requests: Vec<String>,
    /// Whatever the client sent that a real host would not accept as meant.
    pub problems: Vec<String>,
    /// Answer the next create with this instead of creating.
    pub fail_next_create: Option<(u16, Value)>,
    /// Leave existing pull requests out of this many list answers.
    pub hide_from_list: usize,
    /// Wait this long before answering anything.
    pub delay: Option<Duration>,
    /// Answer this many of the next requests (any route) with this status
    /// and body, as a host that is down or failing would.
    pub fail_next: Option<(usize, u16, Value)>,
}

#[derive(Clone)]
struct App {
    state: Arc<Mutex<HostState>>,
    token: String,
    served: PathBuf,
}

/// A running fake host.
pub struct Fake {
    /// The API base URL to configure the client with.
    pub api: String,
    pub state: Arc<Mutex<HostState>>,
}

impl Fake {
    pub fn requests(&self) -> Vec<String> {
        self.state.lock().unwrap().requests.clone()
    }

    pub fn count(&self, request: &str) -> usize {
        self.requests().iter().filter(|r| *r == request).count()
    }

    pub fn prs(&self) -> Vec<Value> {
        self.state.lock().unwrap().prs.clone()
    }

    pub fn problems(&self) -> Vec<String> {
        self.state.lock().unwrap().problems.clone()
    }

    pub fn with<T>(&self, f: impl FnOnce(&mut HostState) -> T) -> T {
        f(&mut self.state.lock().unwrap())
    }
}

async fn start(router: Router<App>, prefix: &str, token: &str, served: PathBuf) -> Fake {
    let state = Arc::new(Mutex::new(HostState::default()));
    let app = App {
        state: state.clone(),
        token: token.into(),
        served,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = Router::new().nest(prefix, router).with_state(app);
    tokio::spawn(async move { axum::serve(listener, router).await });
    Fake {
        api: format!("http://{addr}{prefix}"),
        state,
    }
}

fn answer(status: u16, body: Value) -> Response {
    (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response()
}

impl App {
    /// Records the request, waits the configured delay, and checks auth.
    async fn enter(
        &self,
        request: String,
        headers: &HeaderMap,
        auth: Auth,
    ) -> Result<(), Response> {
        let (delay, failure) = {
            let mut state = self.state.lock().unwrap();
            state.requests.push(request);
            let failure = match &mut state.fail_next {
                Some((left, status, body)) if *left > 0 => {
                    *left -= 1;
                    Some((*status, body.clone()))
                }
                _ => None,
            };
            (state.delay, failure)
        };
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        if let Some((status, body)) = failure {
            return Err(answer(status, body));
        }
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let mut problems = Vec::new();
        let authorised = match auth {
            Auth::GitHub => {
                if header("accept") != Some("application/vnd.github+json") {
                    problems.push(format!("Accept: {:?}", header("accept")));
                }
                if header("x-github-api-version") != Some("2022-11-28") {
                    problems.push(format!(
                        "X-GitHub-Api-Version: {:?}",
                        header("x-github-api-version")
                    ));
                }
                header("authorization") == Some(&format!("Bearer {}", self.token))
            }
            Auth::GitLab => {
                if header("authorization").is_some() {
                    problems.push("GitLab was sent an Authorization header".into());
                }
                header("private-token") == Some(self.token.as_str())
            }
        };
        if !header("user-agent").is_some_and(|ua| ua.starts_with("tracelab-codehost/")) {
            problems.push(format!("User-Agent: {:?}", header("user-agent")));
        }
        self.state.lock().unwrap().problems.extend(problems);
        if !authorised {
            return Err(match auth {
                Auth::GitHub => answer(
                    401,
                    json!({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}),
                ),
                Auth::GitLab => answer(401, json!({"message": "401 Unauthorized"})),
            });
        }
        Ok(())
    }

    fn problem(&self, problem: String) {
        self.state.lock().unwrap().problems.push(problem);
    }

    fn known(&self, project: &str) -> bool {
        bare(&self.served, project).is_dir()
    }
}

#[derive(Clone, Copy)]
enum Auth {
    GitHub,
    GitLab,
}

// ---------------------------------------------------------------- GitHub

/// A fake GitHub Enterprise API at `/api/v3`, serving the repositories
/// under `served` (`{owner}/{repo}.git`).
pub async fn github(token: &str, served: PathBuf) -> Fake {
    let router = Router::new()
        .route(
            "/repos/{owner}/{repo}/pulls",
            get(github_list).post(github_create),
        )
        .route(
            "/repos/{owner}/{repo}/issues/{number}/labels",
            post(github_labels),
        );
    start(router, "/api/v3", token, served).await
}

async fn github_list(
    State(app): State<App>,
    Path((owner, repo)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if let Err(refused) = app
        .enter(
            format!("GET /repos/{owner}/{repo}/pulls"),
            &headers,
            Auth::GitHub,
        )
        .await
    {
        return refused;
    }
    if !app.known(&format!("{owner}/{repo}")) {
        return answer(404, json!({"message": "Not Found"}));
    }
    if query.get("state").map(String::as_str) != Some("all") {
        app.problem(format!("list without state=all: {query:?}"));
    }
    let Some(head) = query.get("head") else {
        app.problem("list without head".into());
        return answer(200, json!([]));
    };
    let Some((head_owner, branch)) = head.split_once(':') else {
        app.problem(format!("head {head:?} is not owner:branch"));
        return answer(200, json!([]));
    };
    if head_owner != owner {
        app.problem(format!("head owner {head_owner} is not {owner}"));
    }
    let mut state = app.state.lock().unwrap();
    if state.hide_from_list > 0 {
        state.hide_from_list -= 1;
        return answer(200, json!([]));
    }
    let found: Vec<Value> = state
        .prs
        .iter()
        .filter(|pr| pr["head"]["ref"] == branch)
        .cloned()
        .collect();
    answer(200, Value::Array(found))
}

async fn github_create(
    State(app): State<App>,
    Path((owner, repo)): Path<(String, String)>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    if let Err(refused) = app
        .enter(
            format!("POST /repos/{owner}/{repo}/pulls"),
            &headers,
            Auth::GitHub,
        )
        .await
    {
        return refused;
    }
    let project = format!("{owner}/{repo}");
    if !app.known(&project) {
        return answer(404, json!({"message": "Not Found"}));
    }
    if body["draft"] != json!(true) {
        app.problem(format!("not a draft: {}", body["draft"]));
    }
    for field in ["title", "head", "base", "body"] {
        if body[field].as_str().is_none_or(|s| s.trim().is_empty()) {
            app.problem(format!("create without {field}"));
        }
    }
    if !body["body"]
        .as_str()
        .unwrap_or("")
        .contains("TraceLab diagnosis")
    {
        app.problem("the body is not the diagnosis".into());
    }
    if let Some(failure) = app.state.lock().unwrap().fail_next_create.take() {
        return answer(failure.0, failure.1);
    }
    let head = body["head"].as_str().unwrap_or("").to_string();
    let base = body["base"].as_str().unwrap_or("").to_string();
    let repository = bare(&app.served, &project);
    if remote_branch(&repository, &head).is_none() || remote_branch(&repository, &base).is_none() {
        return answer(
            422,
            json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "field": "head", "code": "invalid"}]}),
        );
    }
    let mut state = app.state.lock().unwrap();
    if state
        .prs
        .iter()
        .any(|pr| pr["head"]["ref"] == head.as_str() && pr["state"] == "open")
    {
        return answer(
            422,
            json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "code": "custom", "message": format!("A pull request already exists for {owner}:{head}.")}]}),
        );
    }
    let number = 40 + state.prs.len() as u64 + 1;
    let pr = github_pr(&owner, &repo, number, &body);
    state.prs.push(pr.clone());
    answer(201, pr)
}

/// A pull request as GitHub shows it.
pub fn github_pr(owner: &str, repo: &str, number: u64, create: &Value) -> Value {
    json!({
        "number": number,
        "html_url": format!("https://ghe.example.com/{owner}/{repo}/pull/{number}"),
        "state": "open",
        "draft": create["draft"],
        "title": create["title"],
        "body": create["body"],
        "head": {"ref": create["head"], "repo": {"full_name": format!("{owner}/{repo}")}},
        "base": {"ref": create["base"]},
        "labels": [],
    })
}

async fn github_labels(
    State(app): State<App>,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    if let Err(refused) = app
        .enter(
            format!("POST /repos/{owner}/{repo}/issues/{number}/labels"),
            &headers,
            Auth::GitHub,
        )
        .await
    {
        return refused;
    }
    let Some(labels) = body["labels"].as_array() else {
        app.problem(format!("labels body {body}"));
        return answer(422, json!({"message": "Invalid request."}));
    };
    let mut state = app.state.lock().unwrap();
    let Some(pr) = state.prs.iter_mut().find(|pr| pr["number"] == number) else {
        return answer(404, json!({"message": "Not Found"}));
    };
    let existing = pr["labels"].as_array_mut().unwrap();
    for label in labels {
        let name = label.as_str().unwrap_or("").to_string();
        if !existing.iter().any(|l| l["name"] == name.as_str()) {
            existing.push(json!({ "name": name }));
        }
    }
    answer(200, pr["labels"].clone())
}

// ---------------------------------------------------------------- GitLab

/// A fake self-managed GitLab API at `/api/v4`, serving the projects
/// under `served` (`{group}/{project}.git`).
pub async fn gitlab(token: &str, served: PathBuf) -> Fake {
    let router = Router::new()
        .route(
            "/projects/{id}/merge_requests",
            get(gitlab_list).post(gitlab_create),
        )
        .route("/projects/{id}/merge_requests/{iid}", put(gitlab_update));
    start(router, "/api/v4", token, served).await
}

async fn gitlab_list(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if let Err(refused) = app
        .enter(
            format!("GET /projects/{id}/merge_requests"),
            &headers,
            Auth::GitLab,
        )
        .await
    {
        return refused;
    }
    if !app.known(&id) {
        return answer(404, json!({"message": "404 Project Not Found"}));
    }
    if query.get("state").map(String::as_str) != Some("all") {
        app.problem(format!("list without state=all: {query:?}"));
    }
    let Some(branch) = query.get("source_branch") else {
        app.problem("list without source_branch".into());
        return answer(200, json!([]));
    };
    let mut state = app.state.lock().unwrap();
    if state.hide_from_list > 0 {
        state.hide_from_list -= 1;
        return answer(200, json!([]));
    }
    let found: Vec<Value> = state
        .prs
        .iter()
        .filter(|mr| mr["source_branch"] == branch.as_str())
        .cloned()
        .collect();
    answer(200, Value::Array(found))
}

async fn gitlab_create(
    State(app): State<App>,
    Path(id): Path<String>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    if let Err(refused) = app
        .enter(
            format!("POST /projects/{id}/merge_requests"),
            &headers,
            Auth::GitLab,
        )
        .await
    {
        return refused;
    }
    if !app.known(&id) {
        return answer(404, json!({"message": "404 Project Not Found"}));
    }
    if !body["title"]
        .as_str()
        .is_some_and(|t| t.starts_with("Draft: ") && !t["Draft: ".len()..].trim().is_empty())
    {
        app.problem(format!("title is not a draft's: {}", body["title"]));
    }
    if body.get("draft").is_some() || body.get("work_in_progress").is_some() {
        app.problem("GitLab v4 create has no draft field; the title marks it".into());
    }
    if !body["description"]
        .as_str()
        .unwrap_or("")
        .contains("TraceLab diagnosis")
    {
        app.problem("the description is not the diagnosis".into());
    }
    if !body["labels"].is_string() {
        app.problem(format!(
            "labels are not a comma-joined string: {}",
            body["labels"]
        ));
    }
    if let Some(failure) = app.state.lock().unwrap().fail_next_create.take() {
        return answer(failure.0, failure.1);
    }
    let source = body["source_branch"].as_str().unwrap_or("").to_string();
    let target = body["target_branch"].as_str().unwrap_or("").to_string();
    let repository = bare(&app.served, &id);
    if remote_branch(&repository, &source).is_none() {
        return answer(422, json!({"message": ["Source branch does not exist"]}));
    }
    if remote_branch(&repository, &target).is_none() {
        return answer(422, json!({"message": ["Target branch does not exist"]}));
    }
    let mut state = app.state.lock().unwrap();
    if let Some(open) = state
        .prs
        .iter()
        .find(|mr| mr["source_branch"] == source.as_str() && mr["state"] == "opened")
    {
        return answer(
            409,
            json!({"message": [format!("Another open merge request already exists for this source branch: !{}", open["iid"])]}),
        );
    }
    let iid = state.prs.len() as u64 + 1;
    let labels: Vec<&str> = body["labels"]
        .as_str()
        .unwrap_or("")
        .split(',')
        .filter(|l| !l.is_empty())
        .collect();
    let mr = json!({
        "id": 9000 + iid,
        "iid": iid,
        "web_url": format!("https://gitlab.example.com/{id}/-/merge_requests/{iid}"),
        "state": "opened",
        "draft": true,
        "title": body["title"],
        "description": body["description"],
        "source_branch": source,
        "target_branch": target,
        "labels": labels,
    });
    state.prs.push(mr.clone());
    answer(201, mr)
}

async fn gitlab_update(
    State(app): State<App>,
    Path((id, iid)): Path<(String, u64)>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    if let Err(refused) = app
        .enter(
            format!("PUT /projects/{id}/merge_requests/{iid}"),
            &headers,
            Auth::GitLab,
        )
        .await
    {
        return refused;
    }
    let Some(add) = body["add_labels"].as_str() else {
        app.problem(format!("update without add_labels: {body}"));
        return answer(400, json!({"error": "add_labels is missing"}));
    };
    let mut state = app.state.lock().unwrap();
    let Some(mr) = state.prs.iter_mut().find(|mr| mr["iid"] == iid) else {
        return answer(404, json!({"message": "404 Not found"}));
    };
    let labels = mr["labels"].as_array_mut().unwrap();
    for label in add.split(',') {
        if !labels.iter().any(|l| l == label) {
            labels.push(json!(label));
        }
    }
    answer(200, mr.clone())
}
