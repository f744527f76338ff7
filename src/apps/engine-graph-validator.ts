import { jinjaSyntaxError } from '../code/template-syntax.js';
import { validateGraph, GraphError } from '../engine/graph.js';
import type { GraphValidator } from './app-service.js';
import { DslError } from './errors.js';

/** The engine's semantic check of a workflow graph, with the Jinja syntax check, as an import-time validator (GraphError → DslError). */
export const engineGraphValidator: GraphValidator = (doc) => {
  try {
    validateGraph(doc, { templateSyntax: jinjaSyntaxError });
  } catch (err) {
    if (err instanceof GraphError) throw new DslError(err.message);
    throw err;
  }
};
