//! What an install proves about a loaded model before it is used: the known answer, and
//! its speed on a fixed sample of code-like texts (recorded, and measured again by
//! `model status --measure`).

use std::time::Instant;

use crate::semantic::embed::{Embedder, ModelError};

/// The pair whose cosine all-MiniLM-L6-v2's builders check (tests/model/build_onnx.py).
const KNOWN_PAIR: [&str; 2] = ["A man is eating food.", "A man is eating a piece of bread."];
/// Texts in the speed sample: two batches.
const SAMPLE: usize = 64;

/// cos(KNOWN_PAIR), embedded in one batch as a sync would.
pub(crate) fn known_answer(embedder: &Embedder) -> Result<f32, ModelError> {
    let v = embedder.embed(&KNOWN_PAIR)?;
    match v.as_slice() {
        [a, b] => Ok(cosine(a, b)),
        _ => Err(ModelError::Embedding("two vectors expected".into())),
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b)).max(f32::MIN_POSITIVE)
}

/// The threads the embedder runs with (`Embedder::load` uses every core).
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism().map_or(2, std::num::NonZero::get)
}

/// The fixed sample: Python handlers of about 150 tokens each, alike but not equal, so a
/// measurement depends on the machine and the model, never on the repository.
fn sample() -> Vec<String> {
    (0..SAMPLE)
        .map(|i| {
            format!(
                "app/views/orders_{i}.py handle_order_{i}\n\
                 def handle_order_{i}(request, order_id={i}):\n\
                 \x20   \"\"\"Check that the user may see order {i}, add up its lines and return the total.\"\"\"\n\
                 \x20   if not request.user.is_authenticated:\n\
                 \x20       raise PermissionDenied(\"login required\")\n\
                 \x20   order = Order.objects.select_related(\"customer\").get(pk=order_id)\n\
                 \x20   total = Decimal(0)\n\
                 \x20   for line in order.lines.all()[:{i}]:\n\
                 \x20       total += line.price * line.quantity - line.discount\n\
                 \x20   order.total = total\n\
                 \x20   order.save(update_fields=[\"total\", \"updated_at\"])\n\
                 \x20   return JsonResponse({{\"order\": order.pk, \"total\": str(total), \"lines\": {i}}})\n"
            )
        })
        .collect()
}

/// Chunks per second over the sample (after one warm-up batch).
pub(crate) fn measure(embedder: &Embedder) -> Result<f64, ModelError> {
    let texts = sample();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    embedder.embed(&refs[..8])?;
    let started = Instant::now();
    embedder.embed(&refs)?;
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    Ok((refs.len() as f64 / secs * 10.0).round() / 10.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_is_fixed_and_distinct() {
        let a = sample();
        assert_eq!(a, sample());
        assert_eq!(a.len(), SAMPLE);
        assert_ne!(a[0], a[1]);
    }

    #[test]
    fn cosine_of_a_vector_with_itself_is_one() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-6);
    }
}
