//! `mixseek experiment plan FILE --shards N --emit k8s|slurm`: a ready manifest that runs the
//! shards of an experiment on a scheduler, then merges their databases and reports.
//!
//! * Kubernetes ([`Emit::K8s`]): a YAML stream of two `batch/v1` Jobs. `NAME-shards` is an
//!   Indexed Job of `N` completions, pod `I` running `mixseek experiment run FILE -w WORKSPACE
//!   --shard auto/N` (the index comes from `JOB_COMPLETION_INDEX`); a failed pod is retried
//!   [`BACKOFF_LIMIT_PER_INDEX`] times and the retried shard resumes. `NAME-merge` is created
//!   suspended; the leading comment says how to start it once the shards are complete. The
//!   pods mount the workspace claim at [`K8S_MOUNT`] and run there.
//! * Slurm ([`Emit::Slurm`]): one bash script for the login node. It writes two job scripts to
//!   `WORKSPACE/shards/slurm/`, submits the shards as a job array `0-(N-1)` (task `I` runs
//!   `--shard $SLURM_ARRAY_TASK_ID/N`, so a resubmitted subset of tasks still runs the right
//!   shards) and the merge with `--dependency=afterok` on the array.
//!
//! Each shard writes `WORKSPACE/shards/{experiment}-{I}-of-{N}.db`; the merge names the `N`
//! files one by one (a missing shard fails the merge instead of being left out, and another
//! experiment whose name starts the same is never picked up), then reports from
//! `WORKSPACE/mixseek.db`.
//!
//! Every interpolated value is quoted: single quotes for the shell (`$'…'` when it holds a
//! control character, so no value ever spans lines), double-quoted YAML strings, `$` doubled
//! in Kubernetes commands (Kubernetes expands `$(VAR)` there), `%` doubled in Slurm file-name
//! patterns, and comments keep values on one line. A path starting with `-` gets `./` so it is
//! never read as an option. Job names are DNS-1123 labels made from the experiment name.

use std::fmt::Write as _;

/// The container image unless told otherwise.
pub const DEFAULT_IMAGE: &str = "mixseek:latest";
/// The PersistentVolumeClaim holding the workspace unless told otherwise.
pub const DEFAULT_VOLUME_CLAIM: &str = "mixseek-workspace";
/// Where the Kubernetes pods mount the workspace claim; also their working directory.
pub const K8S_MOUNT: &str = "/workspace";
/// How often Kubernetes retries a failed shard (`backoffLimitPerIndex`) or the merge.
pub const BACKOFF_LIMIT_PER_INDEX: u32 = 2;

/// Longest experiment part of a job name: `{base}-shards-{index}` (a pod's host name) stays
/// within a 63-character DNS label for up to 100,000 shards.
const MAX_NAME_BASE: usize = 50;
/// The delimiter of the heredocs in the Slurm script (no generated line can equal it: every
/// value is quoted on one line).
const HEREDOC: &str = "MIXSEEK_JOB";

/// What `plan` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emit {
    /// A Kubernetes Indexed Job for the shards and a suspended Job for the merge (YAML).
    K8s,
    /// A bash script submitting a Slurm job array for the shards and a dependent merge job.
    Slurm,
}

impl Emit {
    /// The word `--emit` takes for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Emit::K8s => "k8s",
            Emit::Slurm => "slurm",
        }
    }
}

/// What the manifests run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanInput {
    /// The experiment's name (its shard files and report use it as is; job names use a
    /// DNS-1123 form of it).
    pub experiment: String,
    /// The experiment file as given, relative to the jobs' working directory (Kubernetes:
    /// [`K8S_MOUNT`]; Slurm: the directory the script is run from).
    pub experiment_file: String,
    /// The workspace the jobs use (`-w`); relative paths as for `experiment_file`.
    pub workspace: String,
    /// How many shards (0 is taken as 1).
    pub shards: u32,
    /// Kubernetes: the container image with `mixseek` on its `PATH` ([`DEFAULT_IMAGE`]).
    pub image: String,
    /// Kubernetes: the PersistentVolumeClaim holding the workspace ([`DEFAULT_VOLUME_CLAIM`]).
    pub volume_claim: String,
    /// Kubernetes: a Secret whose keys become the pods' environment (provider API keys).
    pub env_from_secret: Option<String>,
    /// Executions each shard runs at once: when set, every shard's `mixseek experiment run`
    /// gets `--max-concurrent-executions N` (instead of the experiment file's
    /// `max_concurrent_executions`) and the comments state it with the total over shards.
    pub per_shard_concurrency: Option<u32>,
}

impl PlanInput {
    /// An input with the default image and claim, no secret and no stated concurrency.
    pub fn new(
        experiment: impl Into<String>,
        experiment_file: impl Into<String>,
        workspace: impl Into<String>,
        shards: u32,
    ) -> Self {
        PlanInput {
            experiment: experiment.into(),
            experiment_file: experiment_file.into(),
            workspace: workspace.into(),
            shards,
            image: DEFAULT_IMAGE.to_string(),
            volume_claim: DEFAULT_VOLUME_CLAIM.to_string(),
            env_from_secret: None,
            per_shard_concurrency: None,
        }
    }
}

/// The manifest: YAML for [`Emit::K8s`], a bash script for [`Emit::Slurm`]. Both start with a
/// comment naming the `mixseek` command that generated them, then say how to use them.
pub fn emit(e: Emit, input: &PlanInput) -> String {
    match e {
        Emit::K8s => k8s(input),
        Emit::Slurm => slurm(input),
    }
}

/// The `mixseek experiment plan …` command line that generates this output (one line).
fn generated_by(e: Emit, input: &PlanInput) -> String {
    let mut cmd = format!(
        "mixseek experiment plan {} --shards {} --emit {}",
        shell_quote(&input.experiment_file),
        input.shards.max(1),
        e.as_str()
    );
    if e == Emit::K8s {
        if input.image != DEFAULT_IMAGE {
            let _ = write!(cmd, " --image {}", shell_quote(&input.image));
        }
        if input.volume_claim != DEFAULT_VOLUME_CLAIM {
            let _ = write!(cmd, " --volume-claim {}", shell_quote(&input.volume_claim));
        }
        if let Some(secret) = &input.env_from_secret {
            let _ = write!(cmd, " --secret {}", shell_quote(secret));
        }
    }
    if e == Emit::Slurm || input.workspace != K8S_MOUNT {
        let _ = write!(cmd, " --job-workspace {}", shell_quote(&input.workspace));
    }
    if let Some(c) = input.per_shard_concurrency {
        let _ = write!(cmd, " --per-shard-concurrency {c}");
    }
    one_line(&cmd)
}

/// The comment lines on concurrency and rate limits, shared by both outputs; `how_to_set`
/// (its lines already commented but the first) ends the last sentence.
fn limits_note(input: &PlanInput, n: u32, how_to_set: &str) -> String {
    let concurrency = match input.per_shard_concurrency {
        Some(c) => format!(
            "# Each shard runs up to {c} executions at once, so the {n} shards run up to {}.\n",
            u64::from(c) * u64::from(n)
        ),
        None => format!(
            "# Each shard runs up to the experiment's max_concurrent_executions at once, so the\n\
             # {n} shards run {n} times as many.\n"
        ),
    };
    format!(
        "#\n\
         {concurrency}\
         # Rate limits are per shard too: each shard keeps its own, so together the shards can\n\
         # make {n} times a provider's requests_per_minute and tokens_per_minute. Divide the\n\
         # provider's limit by {n}: set providers.<name>.requests_per_minute (and\n\
         # tokens_per_minute) to limit / {n} in the configuration, or\n\
         # {how_to_set}.\n"
    )
}

// ---------------------------------------------------------------------------------------------
// Kubernetes

fn k8s(input: &PlanInput) -> String {
    let n = input.shards.max(1);
    let base = dns_label(&input.experiment, MAX_NAME_BASE);
    let shards_job = format!("{base}-shards");
    let merge_job = format!("{base}-merge");
    let workspace = path_arg(&input.workspace);
    let file = path_arg(&input.experiment_file);
    let name = one_line(&shell_quote(&input.experiment));
    let claim = one_line(&shell_quote(&input.volume_claim));

    let mut out = String::new();
    let _ = write!(
        out,
        "# Generated by: {generated_by}\n\
         #\n\
         # Experiment {name} in {n} shard{s}: the Indexed Job {shards_job} runs shard I of {n} in\n\
         # pod I (JOB_COMPLETION_INDEX); the Job {merge_job} then merges the shards' databases and\n\
         # prints the report. {merge_job} is created suspended: start it once every shard has\n\
         # succeeded.\n\
         #\n\
         #   kubectl apply -f THIS_FILE\n\
         #   kubectl wait --for=condition=complete --timeout=-1s job/{shards_job}\n\
         #   kubectl patch job/{merge_job} --type=merge -p '{{\"spec\":{{\"suspend\":false}}}}'\n\
         #   kubectl logs -f job/{merge_job}\n\
         #\n\
         # Each shard writes its own database, shards/NAME-I-of-{n}.db in the workspace. A failed\n\
         # pod is retried up to {BACKOFF_LIMIT_PER_INDEX} times (backoffLimitPerIndex, Kubernetes 1.29+; on an older\n\
         # cluster replace it with backoffLimit) and the retried shard resumes where it stopped.\n\
         # If a shard still fails, the Job fails once the others are done (kubectl get pods -l\n\
         # job-name={shards_job} shows which): fix the cause, then kubectl delete job/{shards_job}\n\
         # and apply this file again; finished shards have nothing left to do.\n\
         #\n\
         # The pods mount the PersistentVolumeClaim {claim} at {K8S_MOUNT} and run there:\n\
         # the experiment file, what it names (configurations, task set) and the workspace must be\n\
         # on it, and relative paths are relative to {K8S_MOUNT}. With pods on several nodes the\n\
         # claim must be ReadWriteMany. Adjust resources (commented out below) to your cluster.\n",
        generated_by = generated_by(Emit::K8s, input),
        s = if n == 1 { "" } else { "s" },
    );
    out.push_str(&limits_note(
        input,
        n,
        "add MIXSEEK_PROVIDERS__<NAME>__REQUESTS_PER_MINUTE under env below",
    ));

    // The shards.
    let mut run_command = vec![
        "mixseek".to_string(),
        "experiment".into(),
        "run".into(),
        file,
        "-w".into(),
        workspace.clone(),
        "--shard".into(),
        format!("auto/{n}"),
        "--no-progress".into(),
    ];
    if let Some(c) = input.per_shard_concurrency {
        run_command.extend(["--max-concurrent-executions".into(), c.to_string()]);
    }
    out.push_str("---\n");
    job_header(&mut out, &shards_job, &base, "shards");
    let _ = write!(
        out,
        "spec:\n  \
           completionMode: Indexed\n  \
           completions: {n}\n  \
           parallelism: {n}\n  \
           backoffLimitPerIndex: {BACKOFF_LIMIT_PER_INDEX}\n"
    );
    pod_header(&mut out, &base, "shards", "shard", input);
    let _ = writeln!(out, "          command: {}", k8s_list(&run_command));
    pod_footer(&mut out, input, true);

    // The merge and the report, in a shell for the loop; the values are its arguments, so
    // nothing of them is ever read as shell code.
    out.push_str("---\n");
    job_header(&mut out, &merge_job, &base, "merge");
    let _ = write!(
        out,
        "spec:\n  \
           suspend: true\n  \
           backoffLimit: {BACKOFF_LIMIT_PER_INDEX}\n"
    );
    pod_header(&mut out, &base, "merge", "merge", input);
    let report = if input.experiment.starts_with('-') {
        "mixseek experiment report -w \"$ws\" -- \"$name\""
    } else {
        "mixseek experiment report \"$name\" -w \"$ws\""
    };
    let script = format!(
        "# $1: the workspace, $2: the experiment (the arguments below)\n\
         set -eu\n\
         ws=$1 name=$2\n\
         set --\n\
         for f in \"$ws/shards/$name\"-*-of-{n}.db; do\n\
         \x20 i=${{f#\"$ws/shards/$name\"-}}; i=${{i%-of-{n}.db}}\n\
         \x20 case $i in ''|*[!0-9]*) continue ;; esac\n\
         \x20 set -- \"$@\" \"$f\"\n\
         done\n\
         if [ \"$#\" -ne {n} ]; then\n\
         \x20 echo \"expected {n} shard databases $ws/shards/$name-I-of-{n}.db, found $#\" >&2\n\
         \x20 exit 1\n\
         fi\n\
         mixseek experiment merge \"$@\" -o \"$ws/mixseek.db\"\n\
         {report}\n"
    );
    out.push_str("          command:\n            - \"/bin/sh\"\n            - \"-c\"\n");
    out.push_str("            - |\n");
    for line in script.lines() {
        let _ = writeln!(out, "              {line}");
    }
    for arg in [
        "mixseek-merge",
        workspace.as_str(),
        input.experiment.as_str(),
    ] {
        let _ = writeln!(out, "            - {}", k8s_string(arg));
    }
    pod_footer(&mut out, input, false);
    out
}

/// `apiVersion` to `metadata` of a Job.
fn job_header(out: &mut String, job: &str, base: &str, component: &str) {
    let (job, base) = (yaml_quote(job), yaml_quote(base));
    let _ = write!(
        out,
        "apiVersion: batch/v1\n\
         kind: Job\n\
         metadata:\n  \
           name: {job}\n  \
           labels:\n    \
             app.kubernetes.io/name: mixseek\n    \
             app.kubernetes.io/instance: {base}\n    \
             app.kubernetes.io/component: {component}\n"
    );
}

/// The pod template up to the container's `command`.
fn pod_header(out: &mut String, base: &str, component: &str, container: &str, input: &PlanInput) {
    let base = yaml_quote(base);
    let _ = write!(
        out,
        "  template:\n    \
             metadata:\n      \
               labels:\n        \
                 app.kubernetes.io/name: mixseek\n        \
                 app.kubernetes.io/instance: {base}\n        \
                 app.kubernetes.io/component: {component}\n    \
             spec:\n      \
               restartPolicy: Never\n      \
               containers:\n        \
                 - name: {container}\n          \
                   image: {image}\n          \
                   workingDir: {K8S_MOUNT}\n",
        image = yaml_quote(&input.image),
    );
}

/// The pod template from the container's environment on.
fn pod_footer(out: &mut String, input: &PlanInput, limits_example: bool) {
    if let Some(secret) = &input.env_from_secret {
        let _ = write!(
            out,
            "          envFrom:\n            \
                         - secretRef:\n                \
                             name: {}\n",
            yaml_quote(secret)
        );
    }
    if limits_example {
        out.push_str(
            "          # env:\n          \
                       #   - name: MIXSEEK_PROVIDERS__OPENAI__REQUESTS_PER_MINUTE\n          \
                       #     value: \"100\"\n          \
                       # resources:\n          \
                       #   requests: {cpu: 500m, memory: 1Gi}\n          \
                       #   limits: {memory: 2Gi}\n",
        );
    }
    let _ = write!(
        out,
        "          volumeMounts:\n            \
                     - name: workspace\n              \
                       mountPath: {K8S_MOUNT}\n      \
               volumes:\n        \
                 - name: workspace\n          \
                   persistentVolumeClaim:\n            \
                     claimName: {}\n",
        yaml_quote(&input.volume_claim)
    );
}

/// A flow sequence of Kubernetes command strings.
fn k8s_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| k8s_string(s)).collect();
    format!("[{}]", quoted.join(", "))
}

/// A string of a container's `command` or `args`: Kubernetes expands `$(VAR)` there and reads
/// `$$` as `$`, so every `$` is doubled; then a YAML double-quoted string.
fn k8s_string(s: &str) -> String {
    yaml_quote(&s.replace('$', "$$"))
}

// ---------------------------------------------------------------------------------------------
// Slurm

fn slurm(input: &PlanInput) -> String {
    let n = input.shards.max(1);
    let base = dns_label(&input.experiment, MAX_NAME_BASE);
    let ws = shell_quote(&path_arg(&input.workspace));
    let file = shell_quote(&path_arg(&input.experiment_file));
    let name = shell_quote(&input.experiment);
    let jobs = format!("{ws}/shards/slurm");
    // The same folder as a file-name pattern of --output, where `%` is special.
    let logs = format!(
        "{}/shards/slurm",
        shell_quote(&slurm_pattern_escape(&path_arg(&input.workspace)))
    );
    let last = n - 1;
    let shard_script = format!("{base}-shards.sbatch");
    let merge_script = format!("{base}-merge.sbatch");
    let report = if input.experiment.starts_with('-') {
        format!("mixseek experiment report -w {ws} -- {name}")
    } else {
        format!("mixseek experiment report {name} -w {ws}")
    };
    let concurrency = input
        .per_shard_concurrency
        .map(|c| format!(" --max-concurrent-executions {c}"))
        .unwrap_or_default();

    let mut out = String::new();
    let _ = write!(
        out,
        "#!/bin/bash\n\
         # Generated by: {generated_by}\n\
         #\n\
         # Experiment {name_comment} in {n} shard{s} on Slurm: a job array runs shard I of {n} as\n\
         # task I, then a job depending on every task (afterok) merges the shards' databases and\n\
         # writes the report. Run this on a login node, from the directory the experiment file's\n\
         # and the workspace's paths are relative to (the jobs start there):\n\
         #\n\
         #   bash THIS_FILE          # every shard, then the merge\n\
         #   bash THIS_FILE 3,7      # only these shards (e.g. after they failed), then the merge\n\
         #\n\
         # It writes both job scripts to {jobs_comment}, submits them and prints their\n\
         # ids; the logs go there too. Each shard writes its own database,\n\
         # WORKSPACE/shards/NAME-I-of-{n}.db, and a rerun shard resumes where it stopped, so\n\
         # running this again after a failure only plays what is missing. If a shard fails, the\n\
         # merge is cancelled (--kill-on-invalid-dep).\n\
         #\n\
         # Adjust the resources in the #SBATCH lines below (--time, --cpus-per-task, --mem; add\n\
         # --partition or --account as your site requires). A shard mostly waits for LLM calls.\n\
         # Add %LIMIT to the array to run at most LIMIT shards at once: bash THIS_FILE 0-{last}%4.\n",
        generated_by = generated_by(Emit::Slurm, input),
        name_comment = one_line(&name),
        jobs_comment = one_line(&jobs),
        s = if n == 1 { "" } else { "s" },
    );
    out.push_str(&limits_note(
        input,
        n,
        "export MIXSEEK_PROVIDERS__<NAME>__REQUESTS_PER_MINUTE below (sbatch passes\n\
         # the environment on to the jobs unless your site sets SBATCH_EXPORT)",
    ));
    let _ = write!(
        out,
        "# export MIXSEEK_PROVIDERS__OPENAI__REQUESTS_PER_MINUTE=$((500 / {n}))  # a limit of 500\n\
         \n\
         set -euo pipefail\n\
         \n\
         ARRAY=${{1:-0-{last}}}\n\
         JOBS={jobs}\n\
         mkdir -p -- \"$JOBS\"\n\
         \n\
         cat > \"$JOBS\"/{shard_script} <<'{HEREDOC}'\n\
         #!/bin/bash\n\
         #SBATCH --job-name=mixseek-{base}-shards\n\
         #SBATCH --time=12:00:00\n\
         #SBATCH --cpus-per-task=2\n\
         #SBATCH --mem=4G\n\
         # Task I of the array runs shard I of {n}; a rerun shard resumes.\n\
         set -euo pipefail\n\
         exec mixseek experiment run {file} -w {ws} --shard \"${{SLURM_ARRAY_TASK_ID:?submit with --array=0-{last}}}/{n}\" --no-progress{concurrency}\n\
         {HEREDOC}\n\
         \n\
         cat > \"$JOBS\"/{merge_script} <<'{HEREDOC}'\n\
         #!/bin/bash\n\
         #SBATCH --job-name=mixseek-{base}-merge\n\
         #SBATCH --time=01:00:00\n\
         #SBATCH --cpus-per-task=2\n\
         #SBATCH --mem=8G\n\
         # Merges the {n} shard databases (idempotent), then writes the report.\n\
         set -euo pipefail\n\
         mixseek experiment merge {ws}/shards/{name}-{{0..{last}}}-of-{n}.db -o {ws}/mixseek.db\n\
         {report}\n\
         {HEREDOC}\n\
         \n\
         ARRAY_JOB_ID=$(sbatch --parsable --array=\"$ARRAY\" --output={logs}/'{base}-shards-%A_%a.out' \"$JOBS\"/{shard_script})\n\
         ARRAY_JOB_ID=${{ARRAY_JOB_ID%%;*}}\n\
         MERGE_JOB_ID=$(sbatch --parsable --dependency=afterok:\"$ARRAY_JOB_ID\" --kill-on-invalid-dep=yes --output={logs}/'{base}-merge-%j.out' \"$JOBS\"/{merge_script})\n\
         MERGE_JOB_ID=${{MERGE_JOB_ID%%;*}}\n\
         printf 'Shards: job array %s (tasks %s of 0-{last}).\\n' \"$ARRAY_JOB_ID\" \"$ARRAY\"\n\
         printf 'Merge and report: job %s, once every task has succeeded.\\n' \"$MERGE_JOB_ID\"\n\
         printf 'The report: %s\\n' \"$JOBS/{base}-merge-$MERGE_JOB_ID.out\"\n"
    );
    out
}

/// `%` doubled: a literal path in a Slurm file-name pattern (`--output`). (A `\` in the path
/// would turn off Slurm's replacements in the whole pattern; such a path is not supported.)
fn slurm_pattern_escape(s: &str) -> String {
    s.replace('%', "%%")
}

// ---------------------------------------------------------------------------------------------
// Quoting

/// Whether `c` would break a line: a control character, or a Unicode line or paragraph
/// separator (line breaks to some YAML readers), or a byte-order mark.
fn breaks_line(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
}

/// `s` as one shell word: `'…'` (a `'` inside becomes `'\''`), or bash's `$'…'` when `s`
/// holds a character that could break a line, which it writes as `\xHH` bytes; so a quoted
/// value is always on one line. (A NUL cannot be passed to a program at all; bash stops the
/// word there.)
fn shell_quote(s: &str) -> String {
    if !s.chars().any(breaks_line) {
        return format!("'{}'", s.replace('\'', r"'\''"));
    }
    let mut out = String::from("$'");
    for c in s.chars() {
        match c {
            '\\' => out.push_str(r"\\"),
            '\'' => out.push_str(r"\'"),
            c if breaks_line(c) => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(out, "\\x{b:02x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// `s` as a YAML double-quoted string: `\` and `"` escaped, line-breaking characters as
/// escapes, so the value is on one line and read back exactly.
fn yaml_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str(r"\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str(r"\n"),
            '\t' => out.push_str(r"\t"),
            '\r' => out.push_str(r"\r"),
            '\0' => out.push_str(r"\0"),
            c if breaks_line(c) => {
                let code = u32::from(c);
                if code < 0x100 {
                    let _ = write!(out, "\\x{code:02x}");
                } else {
                    let _ = write!(out, "\\u{code:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `s` with every line-breaking character written as `\u{…}`: for comments.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| {
            if breaks_line(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A path argument that is never read as an option: `./` before one starting with `-`.
fn path_arg(path: &str) -> String {
    if path.starts_with('-') {
        format!("./{path}")
    } else {
        path.to_string()
    }
}

/// A DNS-1123 label of at most `max` (≥ 10) characters made from `name`: lowercase ASCII
/// letters and digits, every other run of characters one `-`, no `-` at either end,
/// `experiment` when nothing is left. A name cut to fit ends with 8 hex digits of a hash of
/// the whole name, so two long names sharing a beginning stay apart.
fn dns_label(name: &str, max: usize) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        out.push_str("experiment");
    }
    if out.len() > max {
        out.truncate(max.saturating_sub(9));
        while out.ends_with('-') {
            out.pop();
        }
        let _ = write!(out, "-{:08x}", fnv1a(name));
    }
    out
}

/// The 32-bit FNV-1a hash of `s` (stable across versions and platforms).
fn fnv1a(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5, |h: u32, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    const HOSTILE: [&str; 6] = [
        "a'b\"; rm -rf /",
        "$(x)",
        "`id` $HOME ${PATH} $$ %j %%",
        "line\nMIXSEEK_JOB\nrm -rf /\n---\nkind: Pod",
        "tab\there\\back\u{2028}sep # not a comment: x",
        "-starts-with-dash 日本語",
    ];

    fn input(name: &str, shards: u32) -> PlanInput {
        PlanInput::new(name, "experiments/demo.toml", "/workspace", shards)
    }

    fn have(program: &str) -> bool {
        Command::new(program)
            .arg("-c")
            .arg("exit 0")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    fn have_pyyaml() -> bool {
        Command::new("python3")
            .args(["-c", "import yaml"])
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// Every YAML document of `text` as JSON, read by PyYAML.
    fn parse_yaml(text: &str) -> Vec<serde_json::Value> {
        use std::io::Write as _;
        let mut child = Command::new("python3")
            .args([
                "-c",
                "import sys, json, yaml\n\
                 print(json.dumps([d for d in yaml.safe_load_all(sys.stdin.read()) if d is not None]))",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "YAML does not parse: {}\n{text}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout).unwrap()
    }

    fn strings(v: &serde_json::Value) -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    }

    /// A fresh empty folder under the system's temporary folder.
    fn scratch(tag: &str) -> PathBuf {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mixseek-plan-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Writes an executable shell script.
    #[cfg(unix)]
    fn executable(path: &Path, text: &str) {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A fake `mixseek` (and `sbatch`) in `bin`: each call's arguments go to a new file of
    /// `calls`, NUL-separated; `sbatch` prints a job id.
    #[cfg(unix)]
    fn fakes(dir: &Path) -> (PathBuf, PathBuf) {
        let bin = dir.join("bin");
        let calls = dir.join("calls");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&calls).unwrap();
        let record = format!(
            "#!/bin/sh\n\
             n=$(ls '{calls}' | wc -l)\n\
             printf '%s\\0' \"$(basename \"$0\")\" \"$@\" > '{calls}'/$(printf '%03d' \"$n\")\n",
            calls = calls.display()
        );
        executable(&bin.join("mixseek"), &record);
        executable(
            &bin.join("sbatch"),
            &format!("{record}echo \"$((1000 + n));cluster\"\n"),
        );
        (bin, calls)
    }

    /// The recorded calls, in order.
    fn calls(dir: &Path) -> Vec<Vec<String>> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files
            .iter()
            .map(|f| {
                let bytes = std::fs::read(f).unwrap();
                let text = String::from_utf8(bytes).unwrap();
                let mut args: Vec<String> = text.split('\0').map(str::to_string).collect();
                args.pop(); // after the last NUL
                args
            })
            .collect()
    }

    fn path_with(bin: &Path) -> String {
        format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    // --- quoting ------------------------------------------------------------------------

    #[test]
    fn shell_quote_forms() {
        assert_eq!(shell_quote("abc"), "'abc'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
        assert_eq!(shell_quote("$(x) `y`"), "'$(x) `y`'");
        assert_eq!(shell_quote("a\nb'\\"), r"$'a\x0ab\'\\'");
        assert_eq!(shell_quote("x\u{2028}"), r"$'x\xe2\x80\xa8'");
        for s in HOSTILE {
            assert!(!shell_quote(s).contains('\n'), "{s:?}");
        }
    }

    #[test]
    fn shell_quote_round_trips_through_bash() {
        if !have("bash") {
            return;
        }
        for s in HOSTILE.iter().copied().chain(["", "'", "''\\'", "\u{85}é"]) {
            let out = Command::new("bash")
                .arg("-c")
                .arg(format!("printf %s {}", shell_quote(s)))
                .output()
                .unwrap();
            assert!(out.status.success(), "{s:?}");
            assert_eq!(String::from_utf8(out.stdout).unwrap(), s);
        }
    }

    #[test]
    fn yaml_quote_forms() {
        assert_eq!(yaml_quote("abc"), "\"abc\"");
        assert_eq!(yaml_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(yaml_quote("a\nb\tc\r\0"), r#""a\nb\tc\r\0""#);
        assert_eq!(yaml_quote("\u{1b}\u{85}\u{2028}"), r#""\x1b\x85\u2028""#);
        assert_eq!(yaml_quote("日本語 # x: y"), "\"日本語 # x: y\"");
    }

    #[test]
    fn yaml_quote_round_trips_through_pyyaml() {
        if !have_pyyaml() {
            return;
        }
        let values: Vec<&str> = HOSTILE
            .iter()
            .copied()
            .chain(["", "null", "1", "~"])
            .collect();
        let doc: String = values
            .iter()
            .map(|s| format!("- {}\n", yaml_quote(s)))
            .collect();
        let parsed = parse_yaml(&doc);
        assert_eq!(strings(&parsed[0]), values);
    }

    #[test]
    fn k8s_strings_double_dollars() {
        assert_eq!(k8s_string("$(HOME)"), "\"$$(HOME)\"");
        assert_eq!(k8s_string("a$"), "\"a$$\"");
    }

    #[test]
    fn one_line_escapes_line_breaks() {
        assert_eq!(one_line("a\nb\u{2028}c"), "a\\u{a}b\\u{2028}c");
        assert_eq!(one_line("plain 'x'"), "plain 'x'");
    }

    #[test]
    fn path_arg_guards_a_leading_dash() {
        assert_eq!(path_arg("-x.toml"), "./-x.toml");
        assert_eq!(path_arg("x.toml"), "x.toml");
        assert_eq!(path_arg("/abs/x.toml"), "/abs/x.toml");
    }

    #[test]
    fn dns_labels() {
        assert_eq!(dns_label("demo", 50), "demo");
        assert_eq!(dns_label("My_Exp.v2", 50), "my-exp-v2");
        assert_eq!(dns_label("--a__b--", 50), "a-b");
        assert_eq!(dns_label("a'b\"; rm -rf /", 50), "a-b-rm-rf");
        assert_eq!(dns_label("$(x)", 50), "x");
        assert_eq!(dns_label("", 50), "experiment");
        assert_eq!(dns_label("___", 50), "experiment");
        assert_eq!(dns_label("日本語", 50), "experiment");
        let long = "a".repeat(80);
        let cut = dns_label(&long, 50);
        assert_eq!(cut.len(), 50);
        assert!(cut.starts_with(&"a".repeat(41)));
        assert_ne!(cut, dns_label(&format!("{long}b"), 50));
        let dashy = format!("{}-{}", "a".repeat(40), "b".repeat(40));
        let cut = dns_label(&dashy, 50);
        assert!(cut.len() <= 50 && !cut.contains("--"), "{cut}");
        for s in HOSTILE
            .iter()
            .copied()
            .chain([long.as_str(), dashy.as_str()])
        {
            let label = dns_label(s, MAX_NAME_BASE);
            assert!(label.len() <= MAX_NAME_BASE, "{label}");
            assert!(
                label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{label}"
            );
            assert!(!label.starts_with('-') && !label.ends_with('-'), "{label}");
            // A pod's host name, `{job}-{index}`, is a DNS label too.
            assert!(format!("{label}-shards-99999").len() <= 63);
        }
    }

    // --- Kubernetes ---------------------------------------------------------------------

    #[test]
    fn k8s_key_lines() {
        let mut i = input("demo", 4);
        i.env_from_secret = Some("llm-keys".into());
        let y = emit(Emit::K8s, &i);
        assert!(y.starts_with(
            "# Generated by: mixseek experiment plan 'experiments/demo.toml' --shards 4 \
             --emit k8s --secret 'llm-keys'\n"
        ));
        for line in [
            "kubectl apply -f THIS_FILE",
            "kubectl wait --for=condition=complete --timeout=-1s job/demo-shards",
            "kubectl patch job/demo-merge --type=merge -p '{\"spec\":{\"suspend\":false}}'",
            "\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: \"demo-shards\"\n",
            "  completionMode: Indexed\n  completions: 4\n  parallelism: 4\n  backoffLimitPerIndex: 2\n",
            "      restartPolicy: Never\n",
            "          command: [\"mixseek\", \"experiment\", \"run\", \"experiments/demo.toml\", \
             \"-w\", \"/workspace\", \"--shard\", \"auto/4\", \"--no-progress\"]\n",
            "          envFrom:\n            - secretRef:\n                name: \"llm-keys\"\n",
            "          volumeMounts:\n            - name: workspace\n              mountPath: /workspace\n",
            "          persistentVolumeClaim:\n            claimName: \"mixseek-workspace\"\n",
            "  name: \"demo-merge\"\n",
            "spec:\n  suspend: true\n  backoffLimit: 2\n",
            "              mixseek experiment merge \"$@\" -o \"$ws/mixseek.db\"\n",
            "              mixseek experiment report \"$name\" -w \"$ws\"\n",
            "            - \"mixseek-merge\"\n            - \"/workspace\"\n            - \"demo\"\n",
            "image: \"mixseek:latest\"",
            "providers.<name>.requests_per_minute",
        ] {
            assert!(y.contains(line), "missing {line:?} in\n{y}");
        }
        // Kubernetes would expand `$(…)` in a command: the script has none.
        let script_start = y.find("- |").unwrap();
        assert!(!y[script_start..].contains("$("));
    }

    #[test]
    fn k8s_parses_and_has_the_right_structure() {
        if !have_pyyaml() {
            return;
        }
        let mut i = input("Demo_Exp", 3);
        i.env_from_secret = Some("keys".into());
        i.per_shard_concurrency = Some(8);
        let y = emit(Emit::K8s, &i);
        assert!(y.contains(
            "# Each shard runs up to 8 executions at once, so the 3 shards run up to 24."
        ));
        let docs = parse_yaml(&y);
        assert_eq!(docs.len(), 2);
        let shards = &docs[0];
        assert_eq!(shards["apiVersion"], "batch/v1");
        assert_eq!(shards["kind"], "Job");
        assert_eq!(shards["metadata"]["name"], "demo-exp-shards");
        assert_eq!(shards["spec"]["completionMode"], "Indexed");
        assert_eq!(shards["spec"]["completions"], 3);
        assert_eq!(shards["spec"]["parallelism"], 3);
        assert_eq!(shards["spec"]["backoffLimitPerIndex"], 2);
        let pod = &shards["spec"]["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        let c = &pod["containers"][0];
        assert_eq!(
            strings(&c["command"]),
            [
                "mixseek",
                "experiment",
                "run",
                "experiments/demo.toml",
                "-w",
                "/workspace",
                "--shard",
                "auto/3",
                "--no-progress",
                "--max-concurrent-executions",
                "8"
            ]
        );
        assert!(
            y.contains("--secret 'keys' --per-shard-concurrency 8\n"),
            "the generating command names the option"
        );
        assert_eq!(c["envFrom"][0]["secretRef"]["name"], "keys");
        assert_eq!(c["volumeMounts"][0]["mountPath"], "/workspace");
        assert_eq!(c["workingDir"], "/workspace");
        assert_eq!(
            pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
            "mixseek-workspace"
        );
        let merge = &docs[1];
        assert_eq!(merge["metadata"]["name"], "demo-exp-merge");
        assert_eq!(merge["spec"]["suspend"], true);
        let command = strings(&merge["spec"]["template"]["spec"]["containers"][0]["command"]);
        assert_eq!(command[..2], ["/bin/sh", "-c"]);
        assert_eq!(command[3..], ["mixseek-merge", "/workspace", "Demo_Exp"]);
    }

    #[test]
    fn k8s_one_shard_and_zero() {
        let y = emit(Emit::K8s, &input("demo", 1));
        assert!(y.contains("in 1 shard:"));
        assert!(y.contains("  completions: 1\n  parallelism: 1\n"));
        assert!(y.contains("\"auto/1\""));
        assert_eq!(emit(Emit::K8s, &input("demo", 0)), y);
    }

    #[test]
    fn k8s_non_default_image_claim_workspace() {
        let mut i = PlanInput::new("demo", "e.toml", "runs/ws", 2);
        i.image = "registry.example/mixseek:1.2".into();
        i.volume_claim = "shared".into();
        let y = emit(Emit::K8s, &i);
        assert!(y.starts_with(
            "# Generated by: mixseek experiment plan 'e.toml' --shards 2 --emit k8s \
             --image 'registry.example/mixseek:1.2' --volume-claim 'shared' \
             --job-workspace 'runs/ws'\n"
        ));
        assert!(y.contains("image: \"registry.example/mixseek:1.2\""));
        assert!(y.contains("claimName: \"shared\""));
        assert!(!y.contains("envFrom"));
    }

    #[test]
    fn k8s_hostile_values_survive_exactly() {
        if !have_pyyaml() {
            return;
        }
        for hostile in HOSTILE {
            let mut i = PlanInput::new(hostile, hostile, hostile, 2);
            i.image = hostile.into();
            i.volume_claim = hostile.into();
            i.env_from_secret = Some(hostile.into());
            let y = emit(Emit::K8s, &i);
            // Comments stay comments: every line is a comment, `---` or indented/known YAML.
            let docs = parse_yaml(&y);
            assert_eq!(docs.len(), 2, "{hostile:?}\n{y}");
            let unescape = |s: &str| s.replace("$$", "$");
            let c = &docs[0]["spec"]["template"]["spec"]["containers"][0];
            let command: Vec<String> = strings(&c["command"]).iter().map(|s| unescape(s)).collect();
            let guarded = path_arg(hostile);
            assert_eq!(command[3], guarded);
            assert_eq!(command[5], guarded);
            assert_eq!(c["image"], hostile);
            assert_eq!(c["envFrom"][0]["secretRef"]["name"], hostile);
            let m = &docs[1]["spec"]["template"]["spec"]["containers"][0];
            let args: Vec<String> = strings(&m["command"]).iter().map(|s| unescape(s)).collect();
            assert_eq!(args[4..], [guarded.as_str(), hostile]);
            let label = docs[0]["metadata"]["name"].as_str().unwrap();
            assert!(label.len() <= 63);
        }
    }

    #[cfg(unix)]
    #[test]
    fn k8s_merge_script_merges_exactly_the_shards() {
        if !have("sh") || !have_pyyaml() {
            return;
        }
        for name in ["demo", "a'b\"; rm -rf x", "$(x) *", "-dash"] {
            let dir = scratch("k8s");
            let (bin, calls_dir) = fakes(&dir);
            let ws = dir.join("ws");
            std::fs::create_dir_all(ws.join("shards")).unwrap();
            for i in 0..3 {
                std::fs::write(ws.join(format!("shards/{name}-{i}-of-3.db")), "").unwrap();
            }
            // Another experiment whose name starts the same, and another shard count.
            std::fs::write(ws.join(format!("shards/{name}-x-1-of-3.db")), "").unwrap();
            std::fs::write(ws.join(format!("shards/{name}-0-of-4.db")), "").unwrap();
            let i = PlanInput::new(name, "e.toml", ws.to_str().unwrap(), 3);
            let docs = parse_yaml(&emit(Emit::K8s, &i));
            let command = strings(&docs[1]["spec"]["template"]["spec"]["containers"][0]["command"]);
            let command: Vec<String> = command.iter().map(|s| s.replace("$$", "$")).collect();
            let status = Command::new("sh")
                .args(&command[1..])
                .env("PATH", path_with(&bin))
                .status()
                .unwrap();
            assert!(status.success(), "{name:?}");
            let calls = calls(&calls_dir);
            let ws_s = ws.to_str().unwrap();
            let mut expected_merge =
                vec!["mixseek".to_string(), "experiment".into(), "merge".into()];
            expected_merge.extend((0..3).map(|i| format!("{ws_s}/shards/{name}-{i}-of-3.db")));
            expected_merge.extend(["-o".into(), format!("{ws_s}/mixseek.db")]);
            assert_eq!(calls[0], expected_merge, "{name:?}");
            let expected_report: Vec<String> = if name.starts_with('-') {
                vec!["mixseek", "experiment", "report", "-w", ws_s, "--", name]
            } else {
                vec!["mixseek", "experiment", "report", name, "-w", ws_s]
            }
            .iter()
            .map(|s| s.to_string())
            .collect();
            assert_eq!(calls[1], expected_report, "{name:?}");
            // A missing shard fails the merge.
            std::fs::remove_file(ws.join(format!("shards/{name}-1-of-3.db"))).unwrap();
            let out = Command::new("sh")
                .args(&command[1..])
                .env("PATH", path_with(&bin))
                .output()
                .unwrap();
            assert!(!out.status.success());
            assert!(String::from_utf8_lossy(&out.stderr).contains("expected 3 shard databases"));
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    // --- Slurm --------------------------------------------------------------------------

    #[test]
    fn a_per_shard_concurrency_reaches_every_shard_and_the_comments() {
        let mut i = PlanInput::new("demo", "experiments/demo.toml", "/home/u/ws", 4);
        i.per_shard_concurrency = Some(6);
        let s = emit(Emit::Slurm, &i);
        assert!(
            s.contains("--no-progress --max-concurrent-executions 6\n"),
            "{s}"
        );
        assert!(s.contains(
            "# Each shard runs up to 6 executions at once, so the 4 shards run up to 24."
        ));
        assert!(
            s.contains("--job-workspace '/home/u/ws' --per-shard-concurrency 6\n"),
            "{s}"
        );
        // unset: the experiment file's max_concurrent_executions, no option passed
        i.per_shard_concurrency = None;
        for e in [Emit::Slurm, Emit::K8s] {
            let s = emit(e, &i);
            assert!(!s.contains("--max-concurrent-executions"), "{s}");
            assert!(
                s.contains("the experiment's max_concurrent_executions"),
                "{s}"
            );
        }
    }

    #[test]
    fn slurm_key_lines() {
        let s = emit(
            Emit::Slurm,
            &PlanInput::new("demo", "experiments/demo.toml", "/home/u/ws", 4),
        );
        assert!(s.starts_with(
            "#!/bin/bash\n# Generated by: mixseek experiment plan 'experiments/demo.toml' \
             --shards 4 --emit slurm --job-workspace '/home/u/ws'\n"
        ));
        for line in [
            "\nset -euo pipefail\n",
            "\nARRAY=${1:-0-3}\n",
            "\nJOBS='/home/u/ws'/shards/slurm\n",
            "cat > \"$JOBS\"/demo-shards.sbatch <<'MIXSEEK_JOB'\n#!/bin/bash\n",
            "#SBATCH --time=12:00:00\n#SBATCH --cpus-per-task=2\n#SBATCH --mem=4G\n",
            "\nexec mixseek experiment run 'experiments/demo.toml' -w '/home/u/ws' --shard \
             \"${SLURM_ARRAY_TASK_ID:?submit with --array=0-3}/4\" --no-progress\nMIXSEEK_JOB\n",
            "\nmixseek experiment merge '/home/u/ws'/shards/'demo'-{0..3}-of-4.db -o \
             '/home/u/ws'/mixseek.db\nmixseek experiment report 'demo' -w '/home/u/ws'\nMIXSEEK_JOB\n",
            "ARRAY_JOB_ID=$(sbatch --parsable --array=\"$ARRAY\" \
             --output='/home/u/ws'/shards/slurm/'demo-shards-%A_%a.out' \"$JOBS\"/demo-shards.sbatch)\n",
            "ARRAY_JOB_ID=${ARRAY_JOB_ID%%;*}\n",
            "--dependency=afterok:\"$ARRAY_JOB_ID\" --kill-on-invalid-dep=yes",
            "providers.<name>.requests_per_minute",
            "# export MIXSEEK_PROVIDERS__OPENAI__REQUESTS_PER_MINUTE=$((500 / 4))  # a limit of 500\n",
        ] {
            assert!(s.contains(line), "missing {line:?} in\n{s}");
        }
    }

    #[test]
    fn slurm_one_shard() {
        let s = emit(Emit::Slurm, &PlanInput::new("demo", "e.toml", "ws", 1));
        assert!(s.contains("in 1 shard on Slurm"));
        assert!(s.contains("\nARRAY=${1:-0-0}\n"));
        assert!(s.contains("--shard \"${SLURM_ARRAY_TASK_ID:?submit with --array=0-0}/1\""));
        assert!(s.contains("'ws'/shards/'demo'-{0..0}-of-1.db"));
    }

    #[test]
    fn slurm_escapes_percent_in_output_patterns() {
        let s = emit(
            Emit::Slurm,
            &PlanInput::new("demo", "e.toml", "/data/100%j", 2),
        );
        assert!(s.contains("--output='/data/100%%j'/shards/slurm/'demo-shards-%A_%a.out'"));
        assert!(s.contains("\nJOBS='/data/100%j'/shards/slurm\n"));
    }

    #[test]
    fn slurm_passes_bash_n() {
        if !have("bash") {
            return;
        }
        let mut inputs = vec![
            PlanInput::new("demo", "experiments/demo.toml", "/home/u/ws", 4),
            PlanInput::new("demo", "e.toml", "ws", 1),
        ];
        for h in HOSTILE {
            inputs.push(PlanInput::new(h, h, h, 3));
        }
        for i in &inputs {
            let script = emit(Emit::Slurm, i);
            let out = Command::new("bash")
                .args(["-n", "-c", &script])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}\n{script}",
                String::from_utf8_lossy(&out.stderr)
            );
            // Every line outside the heredocs is a comment, blank or ours: no value line.
            for line in script.lines() {
                assert_ne!(line, "rm -rf /");
                assert_ne!(line, "---");
            }
        }
    }

    /// Runs the script with fake `sbatch` and `mixseek`, then each job script as Slurm would:
    /// every value reaches `mixseek` exactly.
    #[cfg(unix)]
    #[test]
    fn slurm_runs_with_hostile_values() {
        if !have("bash") {
            return;
        }
        for hostile in HOSTILE.iter().copied().chain(["demo"]) {
            let hostile_path = hostile.replace('/', "_");
            let dir = scratch("slurm");
            let (bin, calls_dir) = fakes(&dir);
            let run_dir = dir.join("run");
            std::fs::create_dir_all(&run_dir).unwrap();
            let i = PlanInput::new(hostile, hostile, hostile_path.as_str(), 3);
            let script = emit(Emit::Slurm, &i);
            let out = Command::new("bash")
                .args(["-c", &script, "plan", "1,2"])
                .current_dir(&run_dir)
                .env("PATH", path_with(&bin))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{hostile:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let ws = path_arg(&hostile_path);
            let jobs = run_dir.join(&ws).join("shards/slurm");
            let label = dns_label(hostile, MAX_NAME_BASE);
            let shard_script = jobs.join(format!("{label}-shards.sbatch"));
            let merge_script = jobs.join(format!("{label}-merge.sbatch"));
            let submitted = calls(&calls_dir);
            let ws_logs = slurm_pattern_escape(&ws);
            assert_eq!(
                submitted[0],
                [
                    "sbatch".to_string(),
                    "--parsable".into(),
                    "--array=1,2".into(),
                    format!("--output={ws_logs}/shards/slurm/{label}-shards-%A_%a.out"),
                    format!("{ws}/shards/slurm/{label}-shards.sbatch"),
                ]
            );
            assert_eq!(submitted[1][2], "--dependency=afterok:1000");
            let stdout = String::from_utf8(out.stdout).unwrap();
            assert!(
                stdout.contains("job array 1000 (tasks 1,2 of 0-2)"),
                "{stdout}"
            );
            assert!(
                stdout.contains(&format!("{label}-merge-1001.out")),
                "{stdout}"
            );

            // The shard job as task 2.
            let status = Command::new("bash")
                .arg(&shard_script)
                .current_dir(&run_dir)
                .env("PATH", path_with(&bin))
                .env("SLURM_ARRAY_TASK_ID", "2")
                .status()
                .unwrap();
            assert!(status.success());
            let file = path_arg(hostile);
            let run = &calls(&calls_dir)[2];
            assert_eq!(
                run,
                &[
                    "mixseek",
                    "experiment",
                    "run",
                    file.as_str(),
                    "-w",
                    ws.as_str(),
                    "--shard",
                    "2/3",
                    "--no-progress"
                ]
            );
            // Without a task id the job refuses to run.
            let status = Command::new("bash")
                .arg(&shard_script)
                .current_dir(&run_dir)
                .env("PATH", path_with(&bin))
                .env_remove("SLURM_ARRAY_TASK_ID")
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(!status.success());

            // The merge job.
            let status = Command::new("bash")
                .arg(&merge_script)
                .current_dir(&run_dir)
                .env("PATH", path_with(&bin))
                .status()
                .unwrap();
            assert!(status.success());
            let all = calls(&calls_dir);
            let mut expected = vec!["mixseek".to_string(), "experiment".into(), "merge".into()];
            expected.extend((0..3).map(|i| format!("{ws}/shards/{hostile}-{i}-of-3.db")));
            expected.extend(["-o".into(), format!("{ws}/mixseek.db")]);
            assert_eq!(all[3], expected, "{hostile:?}");
            let report: Vec<&str> = if hostile.starts_with('-') {
                vec!["mixseek", "experiment", "report", "-w", &ws, "--", hostile]
            } else {
                vec!["mixseek", "experiment", "report", hostile, "-w", &ws]
            };
            assert_eq!(all[4], report, "{hostile:?}");
            assert_eq!(all.len(), 5);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
