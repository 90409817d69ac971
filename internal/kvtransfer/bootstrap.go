package kvtransfer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// The Dynamo bootstrap byte format: the decode side writes the room id as 8
// little-endian bytes, the prefill side answers with the one byte ackByte
// and closes.
const (
	roomIDSize = 8
	ackByte    = 0x01
)

// DefaultBootstrapTimeout bounds each step of a rendezvous: connecting,
// waiting for the ACK, and a prefill worker waiting for a room it does not
// know yet.
const DefaultBootstrapTimeout = 30 * time.Second

// ErrNoAck is returned when the prefill side closed the connection without
// acknowledging the room (it timed out waiting for the room, or the room's
// blocks were released).
var ErrNoAck = errors.New("bootstrap: connection closed without ACK")

// Rendezvous is the decode side of the bootstrap: it connects to host:port,
// sends room and waits for the ACK, each step bounded by timeout (0 means
// DefaultBootstrapTimeout) and by ctx.
func Rendezvous(ctx context.Context, host string, port int, room uint64, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultBootstrapTimeout
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("bootstrap: connect to %s: %w", addr, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	var msg [roomIDSize]byte
	binary.LittleEndian.PutUint64(msg[:], room)
	_ = conn.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := conn.Write(msg[:]); err != nil {
		return fmt.Errorf("bootstrap: send room %d to %s: %w", room, addr, err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	var ack [1]byte
	if _, err := io.ReadFull(conn, ack[:]); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("room %d at %s: %w", room, addr, ErrNoAck)
		}
		return fmt.Errorf("bootstrap: wait for the ACK of room %d from %s: %w", room, addr, err)
	}
	if ack[0] != ackByte {
		return fmt.Errorf("bootstrap: room %d at %s: unexpected ACK byte %#02x", room, addr, ack[0])
	}
	return nil
}

// serveBootstrap accepts rendezvous connections until the listener closes.
func (s *Service) serveBootstrap(ln net.Listener) {
	defer s.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		select {
		case s.conns <- struct{}{}:
		default:
			_ = conn.Close()
			s.connLog.warn(s.log, "bootstrap: connections over the limit closed", "limit", cap(s.conns))
			continue
		}
		s.wg.Add(1)
		go func() {
			defer func() { <-s.conns }()
			s.handleRendezvous(conn)
		}()
	}
}

// handleRendezvous reads a room id, waits (bounded) until the room's
// handoff is complete, acknowledges it and frees the held blocks.
func (s *Service) handleRendezvous(conn net.Conn) {
	defer s.wg.Done()
	defer conn.Close()
	stop := context.AfterFunc(s.ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	_ = conn.SetReadDeadline(time.Now().Add(min(s.timeout, bootstrapRoomTimeout)))
	var msg [roomIDSize]byte
	if _, err := io.ReadFull(conn, msg[:]); err != nil {
		s.log.Debug("bootstrap: no room id", "remote", conn.RemoteAddr().String(), "err", err)
		return
	}
	room := binary.LittleEndian.Uint64(msg[:])
	h, err := s.awaitRoom(room)
	if err != nil {
		// One line per interval for all of them: a client sending bogus
		// rooms must not write one warning each.
		s.roomLog.warn(s.log, "bootstrap: rooms not acknowledged", "last_room", room, "last_err", err.Error())
		return
	}
	_ = conn.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := conn.Write([]byte{ackByte}); err != nil {
		s.roomLog.warn(s.log, "bootstrap: ACKs not delivered", "last_room", room, "last_err", err.Error())
		return
	}
	s.noteAcked(room)
	s.release(h)
}

// noteAcked remembers that room was acknowledged, for the hold timeout, so
// that a second claim of it (the rightful decode after a stranger who
// guessed the room id) is acknowledged at once rather than left waiting
// for blocks that are already freed. Expired entries are dropped here, so
// the map holds at most the rooms of one timeout.
func (s *Service) noteAcked(room uint64) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for r, until := range s.acked {
		if !now.Before(until) {
			delete(s.acked, r)
		}
	}
	s.acked[room] = now.Add(s.timeout)
}

// awaitRoom waits until the handoff of room is held and its modeled
// transfer has elapsed, at most s.timeout for the room to appear and be
// held.
func (s *Service) awaitRoom(room uint64) (*handoff, error) {
	w := s.roomWaiter(room)
	defer s.dropWaiter(room, w)
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	select {
	case <-w.ready:
	case <-timer.C:
		return nil, fmt.Errorf("room %d: no held prefill within %v", room, s.timeout)
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
	h := w.handoff
	if wait := time.Until(h.completeAt); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		}
	}
	return h, nil
}
