import type { Services } from '../services.js';
import type { ResolvedPathway } from '../store/pathways.js';

/** What a call names that must be the account's own. */
interface CallReferences {
  pathway_id?: string | null | undefined;
  pathway_version?: number | null | undefined;
  start_node_id?: string | null | undefined;
  from?: string | null | undefined;
  citation_schema_ids?: readonly string[] | undefined;
}

/**
 * Checks that what calls name is the account's own: the pathway (that version of it, with nodes,
 * holding the start node), the citation schemas and the number they call from. One checker serves one request (Send
 * Call, a batch of thousands, a campaign): each pathway version and the account's numbers are
 * read once.
 *
 * `from` must be one of the account's numbers (bought, or imported with its carrier), as the seed
 * has it ("owned by or uploaded by the caller"); with `encrypted_key` the account's own carrier
 * account holds it and decides.
 */
export class CallReferenceChecker {
  private readonly pathways = new Map<string, Promise<ResolvedPathway | undefined>>();
  private readonly citationSchemas = new Map<string, Promise<boolean>>();
  private numbers: Promise<Set<string>> | undefined;

  constructor(
    private readonly services: Services,
    private readonly accountId: string,
    private readonly options: { ownCarrier: boolean },
  ) {}

  /**
   * Pushes each problem onto `errors`, its field named after `at` ("call_objects[3]: "). Returns the
   * pathway version the call would use, when it names one that is the account's.
   */
  async check(call: CallReferences, errors: string[], at = ''): Promise<ResolvedPathway | undefined> {
    let pathway: ResolvedPathway | undefined;
    if (call.pathway_id) {
      const version = call.pathway_version ?? null;
      const found = (pathway = await this.pathway(call.pathway_id, version));
      if (!found) {
        const exists = version !== null && (await this.pathway(call.pathway_id, null));
        errors.push(
          exists
            ? `${at}pathway_version ${version} is not a version of this pathway`
            : `${at}pathway_id is not a pathway of this account`,
        );
      } else if (found.nodes.length === 0) {
        errors.push(`${at}pathway_id names a pathway with no nodes yet: add nodes to its draft or save a version`);
      } else if (call.start_node_id && !found.nodes.some((n) => n.id === call.start_node_id)) {
        errors.push(
          `${at}start_node_id ${JSON.stringify(call.start_node_id)} is not a node of the pathway version the call uses`,
        );
      }
    }
    for (const [i, id] of (call.citation_schema_ids ?? []).entries()) {
      if (!(await this.citationSchema(id)))
        errors.push(`${at}citation_schema_ids[${i}] "${id}" is not a citation schema of this account`);
    }
    if (call.from && !this.options.ownCarrier && !(await this.ownNumbers()).has(call.from)) {
      errors.push(
        `${at}from ${call.from} is not a number of this account (buy one with POST /v1/inbound/purchase, or leave from out)`,
      );
    }
    return pathway;
  }

  private pathway(id: string, version: number | null): Promise<ResolvedPathway | undefined> {
    const key = `${id}\u0000${version ?? ''}`;
    let found = this.pathways.get(key);
    if (!found) this.pathways.set(key, (found = this.services.pathways.resolveVersion(this.accountId, id, version)));
    return found;
  }

  private citationSchema(id: string): Promise<boolean> {
    let found = this.citationSchemas.get(id);
    if (!found)
      this.citationSchemas.set(
        id,
        (found = this.services.citationSchemas.get(this.accountId, id).then((schema) => schema !== undefined)),
      );
    return found;
  }

  private ownNumbers(): Promise<Set<string>> {
    this.numbers ??= this.services.inbound
      .senders(this.accountId)
      .then((rows) => new Set(rows.map((r) => r.phone_number)));
    return this.numbers;
  }
}
