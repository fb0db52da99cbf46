import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import { SipEndpoint } from '../../src/carriers/sip/endpoint.js';
import { parseMessage, type SipRequest } from '../../src/carriers/sip/message.js';
import { SipRegistration } from '../../src/carriers/sip/register.js';
import { SipStreamReader } from '../../src/carriers/sip/stream.js';
import type { SipTrunk } from '../../src/domain/sip-trunk.js';
import { waitFor } from '../../src/testing/wait.js';

/** A registrar's 200 OK to `request`, granting an hour. */
function ok(request: SipRequest): string {
  const h = (name: string) => request.headers.get(name)![0]!;
  return [
    'SIP/2.0 200 OK',
    `Via: ${h('via')}`,
    `From: ${h('from')}`,
    `To: ${h('to')};tag=reg`,
    `Call-ID: ${h('call-id')}`,
    `CSeq: ${h('cseq')}`,
    `Contact: ${h('contact')};expires=3600`,
    'Content-Length: 0',
    '',
    '',
  ].join('\r\n');
}

const trunk = (port: number, transport: 'udp' | 'tcp'): SipTrunk & { username: string } => ({
  host: '127.0.0.1',
  port,
  transport,
  username: 'alice',
  password: 's3cret',
  register: true,
});

/**
 * Registration behind NAT: while registered, Openline sends keep-alives from its SIP port to the
 * registrar, so the router keeps the binding the registrar's calls come in through; a TCP
 * registration whose connection was closed registers again on a new one.
 */
describe('SIP registration keep-alives', () => {
  it('over UDP: double-CRLF keep-alives from the SIP port to the registrar while registered, none after', async () => {
    const registrar = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => registrar.bind(0, '127.0.0.1', resolve));
    const endpoint = await SipEndpoint.listen({ host: '127.0.0.1', port: 0 });
    const pings: number[] = [];
    const registers: SipRequest[] = [];
    registrar.on('message', (data, from) => {
      if (data.toString() === '\r\n\r\n') {
        pings.push(from.port);
        return;
      }
      const request = parseMessage(data);
      if (request?.kind !== 'request' || request.method !== 'REGISTER') return;
      registers.push(request);
      registrar.send(ok(request), from.port, from.address);
    });
    const registration = new SipRegistration(endpoint, trunk(registrar.address().port, 'udp'), { keepAliveMs: 100 });
    try {
      registration.start();
      await waitFor('three keep-alives', () => pings.length >= 3 || undefined, 5000);
      assert.deepEqual(new Set(pings), new Set([endpoint.port]), 'from the port the REGISTER went from');
      assert.equal(registration.registeredFor, 3600);
      await registration.stop();
      const after = pings.length;
      await new Promise((resolve) => setTimeout(resolve, 400));
      assert.equal(pings.length, after, 'no keep-alive after the registration ended');
      assert.equal(registers.at(-1)?.headers.get('expires')?.[0], '0');
    } finally {
      endpoint.close();
      registrar.close();
    }
  });

  it('over TCP: keep-alives on the registration connection, answered; a closed connection is registered again at once', async () => {
    const sockets: net.Socket[] = [];
    let pings = 0;
    const registers: SipRequest[] = [];
    const registrar = net.createServer((socket) => {
      sockets.push(socket);
      const reader = new SipStreamReader();
      socket.on('data', (chunk) => {
        const read = reader.push(chunk);
        if (read === 'malformed') return;
        pings += read.pings;
        for (let i = 0; i < read.pings; i++) socket.write('\r\n');
        for (const data of read.messages) {
          const request = parseMessage(data);
          if (request?.kind !== 'request' || request.method !== 'REGISTER') continue;
          registers.push(request);
          socket.write(ok(request));
        }
      });
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => registrar.listen(0, '127.0.0.1', resolve));
    const port = (registrar.address() as net.AddressInfo).port;
    const endpoint = await SipEndpoint.listen({ host: '127.0.0.1', port: 0 });
    const registration = new SipRegistration(endpoint, trunk(port, 'tcp'), { keepAliveMs: 100 });
    try {
      registration.start();
      await waitFor('two keep-alives', () => pings >= 2 || undefined, 5000);
      assert.equal(sockets.length, 1, 'on the registration connection');
      assert.equal(registers.length, 1);
      // The registrar (or a router on the way) drops the connection: Openline registers again.
      sockets[0]!.destroy();
      await waitFor('a new REGISTER', () => registers.length >= 2 || undefined, 5000);
      assert.equal(sockets.length, 2, 'on a new connection');
      assert.equal(registration.registeredFor, 3600);
    } finally {
      await registration.stop();
      endpoint.close();
      for (const socket of sockets) socket.destroy();
      registrar.close();
    }
  });
});
