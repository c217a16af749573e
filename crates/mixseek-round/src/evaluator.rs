//! The evaluator crate's [`Evaluator`] as the controller's [`SubmissionEvaluator`].

use crate::ports::{EvaluateError, Evaluation, EvaluationRequest, SubmissionEvaluator};
use mixseek_evaluator::{Evaluator, EvaluatorError};

fn is_transient(e: &EvaluatorError) -> bool {
    let failures = e.failures();
    !failures.is_empty() && failures.iter().all(|f| f.kind.is_transient())
}

#[async_trait::async_trait]
impl SubmissionEvaluator for Evaluator {
    async fn evaluate(&self, request: &EvaluationRequest) -> Result<Evaluation, EvaluateError> {
        let req = mixseek_evaluator::EvaluationRequest {
            user_prompt: request.user_query.clone(),
            submission: request.submission.clone(),
            execution_id: Some(request.execution_id.clone()),
            team_id: Some(request.team_id.clone()),
            team_name: Some(request.team_name.clone()),
            round_number: Some(request.round_number),
            domain_context: request.domain_context.clone(),
            language: request.language.clone(),
            attachments: request.attachments.clone(),
            ..Default::default()
        };
        match Evaluator::evaluate(self, &req).await {
            Ok(outcome) => Ok(Evaluation {
                score_details: outcome.score_details,
                usage: outcome.usage,
            }),
            Err(e) => Err(EvaluateError {
                message: e.to_string(),
                transient: is_transient(&e),
            }),
        }
    }
}
